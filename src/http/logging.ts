import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino'
import { mayHoldUrl, redactText, redactUrl } from './redact.js'

/** How deep the fields of a logged object are searched for text to redact. */
const fieldDepth = 3

/**
 * A logged value with every request target in its text redacted: a string, or the strings of
 * plain objects and arrays within it. What changes is copied: the caller's objects stay as
 * they are; any other object (a request, a Buffer) is left to its serializer.
 */
function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return mayHoldUrl(value) ? redactText(value) : value
  if (depth === 0 || typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    let out: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const redacted = redactValue(value[i], depth - 1)
      if (redacted !== value[i]) {
        out ??= [...value]
        out[i] = redacted
      }
    }
    return out ?? value
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return value
  let out: Record<string, unknown> | undefined
  for (const [key, field] of Object.entries(value)) {
    const redacted = redactValue(field, depth - 1)
    if (redacted !== field) {
      out ??= { ...value }
      out[key] = redacted
    }
  }
  return out ?? value
}

/**
 * An error as pino writes it, without what could hold a secret: the raw bytes of a request
 * the HTTP parser refused (`rawPacket`, which Fastify logs at trace: its request line carries
 * the token), and any request target in its message, its stack or its other fields.
 */
function serializeError(err: unknown): unknown {
  if (typeof err === 'string') return redactText(err)
  const out = pino.stdSerializers.err(err as Error)
  // Not an error: the serializer gave back the caller's own object, which is not ours to edit.
  if (out === err || typeof out !== 'object' || out === null) return redactValue(out, fieldDepth)
  const serialized = out as unknown as Record<string, unknown>
  if (serialized.rawPacket !== undefined) serialized.rawPacket = undefined
  for (const key of Object.keys(serialized)) {
    serialized[key] = redactValue(serialized[key], fieldDepth)
  }
  return serialized
}

/** Serialized apart: a request, a response and an error have serializers of their own. */
const ownSerializers = new Set(['req', 'res', 'err'])

/** A log call's object with its text fields redacted (a copy, when anything changes). */
function redactFields(object: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined
  for (const key of Object.keys(object)) {
    if (ownSerializers.has(key)) continue
    const field = object[key]
    const redacted = redactValue(field, fieldDepth)
    if (redacted !== field) {
      out ??= { ...object }
      out[key] = redacted
    }
  }
  return out ?? object
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
 * The process's logger. No line holds a token or a link's secret (redact.ts: every route with a
 * `:secret`, every secret query value): request URLs are redacted, errors lose their raw request
 * bytes, and messages (Fastify writes a raw URL into a few, and into some errors' messages) and
 * the text fields of every logged object are redacted before they are written.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    serializers: {
      req: (req) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
      err: serializeError,
    },
    formatters: { log: redactFields },
    hooks: {
      logMethod(args, method) {
        redactArguments(args as unknown[])
        return method.apply(this, args)
      },
    },
  }
  return destination === undefined ? pino(options) : pino(options, destination)
}
