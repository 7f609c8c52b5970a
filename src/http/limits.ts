import type { Server, Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { FastifyServerOptions } from 'fastify'

/**
 * What one client may take of the server. Node and Fastify set no request timeout by default,
 * so a client sending a byte a minute would hold a connection (and its memory) for ever.
 * Documented in docs/operations.md "Limits".
 */
export const limits = {
  /** The request line and headers must all arrive within this (slow headers: slowloris). */
  headersTimeoutMs: 5_000,
  /** The whole request, body included, must arrive within this (slow bodies). */
  requestTimeoutMs: 10_000,
  /** An idle keep-alive connection is closed after this; above common load balancers' 60 s. */
  keepAliveTimeoutMs: 65_000,
  /** A TLS handshake must be done within this. */
  handshakeTimeoutMs: 5_000,
  /**
   * A connection that carries no byte either way for this long is closed, whatever state it is
   * in: the backstop for a client that stops reading a response (past the keep-alive timeout).
   */
  silentMs: 70_000,
  /** How often open connections are looked at for silence. */
  silentCheckMs: 5_000,
  /** How often Node looks for connections past those timeouts. */
  checkIntervalMs: 500,
  /** Request line plus headers, in bytes; past it: 431. */
  maxHeaderBytes: 16 * 1024,
  /** Headers past this count are dropped by Node. */
  maxHeaders: 100,
  /**
   * The API's largest valid body is 100 allowed URLs of 2,048 characters (about 205 KB) and a
   * note of 1,024 characters; past this: 422 `resources are invalid`.
   */
  bodyBytes: 256 * 1024,
  /** JSON bodies nested deeper than this are refused before they are parsed. */
  jsonDepth: 32,
} as const

/** Node's options for the HTTP(S) server: Fastify passes `https` (or `http`) to createServer. */
export const nodeServerOptions = {
  handshakeTimeout: limits.handshakeTimeoutMs,
  headersTimeout: limits.headersTimeoutMs,
  requestTimeout: limits.requestTimeoutMs,
  keepAliveTimeout: limits.keepAliveTimeoutMs,
  connectionsCheckingInterval: limits.checkIntervalMs,
  maxHeaderSize: limits.maxHeaderBytes,
}

const statusTexts: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
}

const statusOf = (code: string | undefined) => {
  if (code === 'HPE_HEADER_OVERFLOW') return 431
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_HEADER_TIMEOUT') return 408
  return 400
}

/**
 * A request Node could not parse, or one too slow: answered in the contract's `{"message"}`
 * shape when the socket can still take it, then closed. Nothing of the request is logged (its
 * first line may hold a token).
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket) {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const status = statusOf(err.code)
  const body = JSON.stringify({ message: statusTexts[status] })
  // As every answer (http/headers.ts): nosniff, and HSTS over TLS.
  const tls = (socket as Partial<TLSSocket>).encrypted === true
  socket.end(
    `HTTP/1.1 ${status} ${statusTexts[status]}\r\nConnection: close\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      'Access-Control-Allow-Origin: *\r\nX-Content-Type-Options: nosniff\r\n' +
      (tls ? 'Strict-Transport-Security: max-age=63072000\r\n' : '') +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  )
}

/** Fastify's share of the limits. */
export const fastifyLimits: Pick<
  FastifyServerOptions,
  'bodyLimit' | 'requestTimeout' | 'keepAliveTimeout' | 'connectionTimeout' | 'clientErrorHandler'
> = {
  bodyLimit: limits.bodyBytes,
  requestTimeout: limits.requestTimeoutMs,
  keepAliveTimeout: limits.keepAliveTimeoutMs,
  // No socket timeout: Node re-arms one on every read and write (about 3,000 instructions a
  // request); closeSilentConnections is the backstop instead.
  connectionTimeout: 0,
  clientErrorHandler,
}

/**
 * Closes every connection of `server` that has carried no byte either way (its bytes read and
 * written, queued ones included, unchanged) for `silentMs`, looking every `everyMs`: a client
 * that stopped reading, or went quiet where no other timeout applies, is let go after
 * silentMs to silentMs + everyMs. Costs nothing per request. Returns the function that stops it
 * (also stopped when the server closes).
 */
export function closeSilentConnections(
  server: Server,
  silentMs: number = limits.silentMs,
  everyMs: number = limits.silentCheckMs,
): () => void {
  const seen = new Map<Socket, { bytes: number; since: number }>()
  const watch = (socket: Socket) => {
    seen.set(socket, { bytes: socket.bytesRead + socket.bytesWritten, since: Date.now() })
    socket.once('close', () => seen.delete(socket))
  }
  const sweep = () => {
    const now = Date.now()
    for (const [socket, last] of seen) {
      const bytes = socket.bytesRead + socket.bytesWritten
      if (bytes !== last.bytes) {
        last.bytes = bytes
        last.since = now
      } else if (now - last.since >= silentMs) {
        socket.destroy()
      }
    }
  }
  server.on('connection', watch)
  const timer = setInterval(sweep, everyMs)
  timer.unref()
  const stop = () => {
    clearInterval(timer)
    server.off('connection', watch)
  }
  server.once('close', stop)
  return stop
}

/**
 * The depth of the deepest array or object in a JSON text, read without parsing it, stopping
 * past `max`. Strings are skipped, escapes included.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92)
        i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) {
      if (++depth > max) return true
    } else if (c === 93 || c === 125) depth--
  }
  return false
}
