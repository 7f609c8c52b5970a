import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino'
import { mayHoldUrl, redactText, redactUrl } from './redact.js'

/**
 * An error as pino writes it, without what could hold a secret: the raw bytes of a request
 * the HTTP parser refused (`rawPacket`, which Fastify logs at trace: its request line carries
 * the token), and any request target in its message or stack.
 */
function serializeError(err: unknown): unknown {
  if (typeof err === 'string') return redactText(err)
  const out = pino.stdSerializers.err(err as Error)
  // Not an error: the serializer gave back the caller's own object, which is not ours to edit.
  if (out === err || typeof out !== 'object' || out === null) return out
  const serialized = out as unknown as Record<string, unknown>
  if (serialized.rawPacket !== undefined) serialized.rawPacket = undefined
  if (typeof serialized.message === 'string') serialized.message = redactText(serialized.message)
  if (typeof serialized.stack === 'string') serialized.stack = redactText(serialized.stack)
  return serialized
}

/**
 * A log call's arguments with their text redacted. Given an error (or `{ err }`) and no
 * message, pino writes the error's message as the line's: that one is given here, redacted.
 */
function redactArguments(args: unknown[]) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (typeof arg === 'string' && mayHoldUrl(arg)) args[i] = redactText(arg)
  }
  const [first] = args
  if (args.length > 1 || typeof first !== 'object' || first === null) return
  const err = first instanceof Error ? first : (first as { err?: unknown; msg?: unknown }).err
  if (!(first instanceof Error) && (first as { msg?: unknown }).msg !== undefined) return
  const message = (err as { message?: unknown } | undefined)?.message
  if (typeof message === 'string' && mayHoldUrl(message)) args.push(redactText(message))
}

/**
 * The process's logger. No line holds a token or a setup link's secret: request URLs are
 * redacted, errors lose their raw request bytes, and messages (Fastify writes a raw URL into
 * a few, and into some errors' messages) are redacted before they are written.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    serializers: {
      req: (req) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
      err: serializeError,
    },
    hooks: {
      logMethod(args, method) {
        redactArguments(args as unknown[])
        return method.apply(this, args)
      },
    },
  }
  return destination === undefined ? pino(options) : pino(options, destination)
}
