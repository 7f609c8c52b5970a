import { createServer, type IncomingHttpHeaders, type RequestListener } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { decodeMessage, tables } from './protobuf-decode.js'

/**
 * A local OTLP/HTTP receiver for tests: a node:http server on 127.0.0.1 and a free port that
 * records every request and decodes its body, JSON or protobuf, into the OTLP/JSON shape (ids
 * in hex, 64-bit integers as strings), so that a test reads both protocols alike.
 */

export type Signal = 'traces' | 'metrics' | 'logs'

// The decoded requests are OTLP's JSON, read by the tests field by field.
// biome-ignore lint/suspicious/noExplicitAny: a test reads decoded OTLP by path.
export type Otlp = any

export interface Received {
  /** The request's path (`/v1/traces`, or a per-signal endpoint's own). */
  path: string
  method: string
  headers: IncomingHttpHeaders
  /** `json` or `protobuf`, by Content-Type. */
  protocol: 'json' | 'protobuf'
  body: Buffer
  /** The decoded request, by the signal its path names (`signal` otherwise). */
  decoded: Otlp
}

export interface Receiver {
  /** `http://127.0.0.1:<port>`. */
  url: string
  received: Received[]
  /** Answered to every request (200 by default): set it to test refusals. */
  status: number
  /** Milliseconds to wait before answering. */
  delayMs: number
  /** The signal of a path that is not /v1/<signal> (a per-signal endpoint's own path). */
  signalOf: Map<string, Signal>
  /** Resolves once `n` requests of `path` arrived (5 s at most). */
  waitFor(path: string, n?: number): Promise<Received[]>
  /** Every span of every trace request, in order of arrival. */
  spans(): Otlp[]
  /** Every log record, in order of arrival. */
  logRecords(): Otlp[]
  close(): Promise<void>
}

const signalPath = /^\/v1\/(traces|metrics|logs)$/

function decode(signal: Signal, protocol: 'json' | 'protobuf', body: Buffer): Otlp {
  if (protocol === 'json') return JSON.parse(body.toString('utf8'))
  return decodeMessage(body, tables[signal])
}

/** A receiver over HTTP, or over HTTPS with `tls` (a certificate for 127.0.0.1 and its key). */
export async function otlpReceiver(tls?: { cert: string; key: string }): Promise<Receiver> {
  const received: Received[] = []
  const waiters = new Set<() => void>()
  const receiver: Receiver = {
    url: '',
    received,
    status: 200,
    delayMs: 0,
    signalOf: new Map(),
    waitFor(path, n = 1) {
      const ofPath = () => received.filter((r) => r.path === path)
      return new Promise((resolve, reject) => {
        const check = () => {
          if (ofPath().length < n) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve(ofPath())
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`${ofPath().length} of ${n} requests to ${path} arrived`))
        }, 5000)
        waiters.add(check)
        check()
      })
    },
    spans: () =>
      received
        .filter((r) => r.decoded?.resourceSpans !== undefined)
        .flatMap((r) => r.decoded.resourceSpans.flatMap((rs: Otlp) => rs.scopeSpans))
        .flatMap((ss: Otlp) => ss.spans),
    logRecords: () =>
      received
        .filter((r) => r.decoded?.resourceLogs !== undefined)
        .flatMap((r) => r.decoded.resourceLogs.flatMap((rl: Otlp) => rl.scopeLogs))
        .flatMap((sl: Otlp) => sl.logRecords),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
  const listener: RequestListener = (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const path = req.url ?? ''
      const body = Buffer.concat(chunks)
      const protocol = req.headers['content-type'] === 'application/json' ? 'json' : 'protobuf'
      const signal = (signalPath.exec(path)?.[1] as Signal) ?? receiver.signalOf.get(path)
      let decoded: Otlp
      try {
        decoded = signal === undefined ? undefined : decode(signal, protocol, body)
      } catch (err) {
        // A body that does not decode: recorded as such (a test's exact expectation fails).
        decoded = { undecodable: (err as Error).message }
      }
      received.push({
        path,
        method: req.method ?? '',
        headers: req.headers,
        protocol,
        body,
        decoded,
      })
      for (const check of [...waiters]) check()
      setTimeout(() => {
        res.writeHead(receiver.status, { 'content-type': req.headers['content-type'] ?? '' })
        res.end(protocol === 'json' ? '{}' : '')
      }, receiver.delayMs)
    })
  }
  const server = tls === undefined ? createServer(listener) : createHttpsServer(tls, listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const scheme = tls === undefined ? 'http' : 'https'
  receiver.url = `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`
  return receiver
}

/** An attribute list as an object: `{ key: value }`, the value as OTLP/JSON writes it. */
export const attributesOf = (attributes: Otlp[] | undefined): Record<string, unknown> =>
  Object.fromEntries(
    (attributes ?? []).map(({ key, value }: Otlp) => [key, Object.values(value)[0]]),
  )
