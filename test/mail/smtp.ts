import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { SMTPServer } from 'smtp-server'

/** A message as the SMTP server received it: the envelope, the headers, the decoded text. */
export interface Received {
  mailFrom: string
  rcptTo: string[]
  user?: string
  headers: Map<string, string>
  text: string
}

/** quoted-printable and base64 bodies back to text (7bit and 8bit are text already). */
function decodeBody(body: string, encoding: string | undefined): string {
  if (encoding === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString()
  if (encoding !== 'quoted-printable') return body
  const bytes = body
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/gi, (_, hex) => String.fromCharCode(Number.parseInt(hex, 16)))
  return Buffer.from(bytes, 'latin1').toString('utf8')
}

/** RFC 2047 encoded words (`=?UTF-8?Q?...?=`), as a mail client shows them. */
function decodeWords(value: string): string {
  return value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?[^?]+\?([QqBb])\?([^?]*)\?=/g, (_, encoding: string, text: string) =>
      encoding.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : decodeBody(text.replace(/_/g, ' '), 'quoted-printable'),
    )
}

export function parseMessage(raw: string) {
  const split = raw.indexOf('\r\n\r\n')
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ')
  const headers = new Map<string, string>()
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':')
    headers.set(line.slice(0, colon).toLowerCase(), decodeWords(line.slice(colon + 1).trim()))
  }
  const body = decodeBody(raw.slice(split + 4), headers.get('content-transfer-encoding'))
  return { headers, text: body.replace(/\r\n/g, '\n') }
}

/**
 * A real SMTP server on loopback, in process: what Tessera hands over is what the tests read.
 * Plain text only (STARTTLS off: nodemailer would otherwise upgrade and refuse the server's
 * built-in self-signed certificate); with `users`, AUTH PLAIN/LOGIN against them.
 */
export async function startSmtp(
  options: {
    users?: Record<string, string>
    refuse?: (address: string) => boolean
    host?: string
  } = {},
) {
  const received: Received[] = []
  const server = new SMTPServer({
    logger: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: options.users === undefined,
    onAuth(auth, _session, callback) {
      const ok = options.users?.[auth.username ?? ''] === auth.password
      callback(ok ? null : new Error('Invalid username or password'), { user: auth.username })
    },
    onRcptTo(address, _session, callback) {
      if (!options.refuse?.(address.address)) return callback()
      callback(
        Object.assign(new Error(`<${address.address}>: no such mailbox`), { responseCode: 550 }),
      )
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        received.push({
          mailFrom: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          rcptTo: session.envelope.rcptTo.map((a) => a.address),
          user: session.user as string | undefined,
          ...parseMessage(Buffer.concat(chunks).toString('utf8')),
        })
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, options.host ?? '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  return {
    port,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** A pino logger whose lines the test reads, parsed. */
export function capturedLog() {
  const lines: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      done()
    },
  })
  return { log: pino({ level: 'info' }, sink), lines }
}

/** The lines' fields that say what happened, without pino's time, pid and hostname. */
export const logged = (lines: Record<string, unknown>[]) =>
  lines.map(({ time: _t, pid: _p, hostname: _h, ...rest }) => rest)
