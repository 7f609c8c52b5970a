import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest, type RequestOptions } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { rootCertificates } from 'node:tls'
import { systemReason } from '../config.js'
import type { Attempt } from '../db/webhook-deliveries.js'
import { ApiError } from '../errors.js'
import { isoTime } from '../time.js'
import { signatureHeader } from './signature.js'
import {
  bareHost,
  type ResolvedAddress,
  type Resolver,
  resolveTarget,
  systemResolver,
} from './target.js'

export interface SendResult {
  attempt: Attempt
  /** A 2xx answer. */
  delivered: boolean
  /** Given up because the dispatcher stops: not a verdict on the endpoint, so not recorded. */
  aborted: boolean
}

export interface SenderOptions {
  allowPrivate: boolean
  /** PEM file of certificate authorities trusted besides the system's (WEBHOOK_CA_FILE). */
  caFile?: string
  now: () => number
  resolve?: Resolver
  timeoutMs?: number
}

export const userAgent = 'Tessera-Webhooks/1'

/** Connects to the addresses that were checked, whatever the host name resolves to by now. */
const pinned =
  (addresses: ResolvedAddress[]): LookupFunction =>
  (_host, options, callback) => {
    const [first] = addresses
    if (options.all) callback(null, addresses)
    else callback(null, first?.address ?? '', first?.family)
  }

const abortable = <T>(promise: Promise<T>, signal: AbortSignal) =>
  new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })

function post(url: URL, options: RequestOptions, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    const req = send(url, options, (res) => {
      // The answer's body is not kept; reading it lets the connection close cleanly.
      res.on('error', () => {})
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Signs and posts events; checks the endpoint's addresses at every attempt (DNS can change). */
export class Sender {
  private ca: string[] | undefined
  private readonly timeoutMs: number
  private readonly resolve: Resolver

  constructor(private readonly options: SenderOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000
    this.resolve = options.resolve ?? systemResolver
  }

  async send(
    endpoint: { url: string; secret: string },
    eventId: string,
    body: string,
    stop?: AbortSignal,
  ): Promise<SendResult> {
    const at = isoTime(this.options.now())
    const started = performance.now()
    const timeout = AbortSignal.timeout(this.timeoutMs)
    const signal = stop ? AbortSignal.any([stop, timeout]) : timeout
    const result = (status: number | null, error?: string): SendResult => {
      const attempt: Attempt = { at, status, durationMs: Math.round(performance.now() - started) }
      if (error !== undefined) attempt.error = error.slice(0, 256)
      return { attempt, delivered: error === undefined, aborted: stop?.aborted === true }
    }
    try {
      const url = new URL(endpoint.url)
      const addresses = await abortable(
        resolveTarget(url, this.options.allowPrivate, this.resolve),
        signal,
      )
      const host = bareHost(url)
      const options: RequestOptions = {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(body)),
          'User-Agent': userAgent,
          'Tessera-Signature': signatureHeader(endpoint.secret, body, this.options.now()),
          'Tessera-Event-Id': eventId,
        },
        // A connection of its own: one kept alive would outlive the address check it passed.
        agent: false,
        lookup: pinned(addresses),
        signal,
      }
      if (url.protocol === 'https:') {
        if (isIP(host) === 0) options.servername = host
        const ca = this.trusted()
        if (ca !== undefined) options.ca = ca
      }
      const status = await post(url, options, body)
      return result(status, status >= 200 && status < 300 ? undefined : `HTTP ${status}`)
    } catch (err) {
      if (timeout.aborted) return result(null, `timed out after ${this.timeoutMs / 1000} s`)
      if (err instanceof ApiError && err.kind === 'badWebhookUrl') {
        return result(null, `refused: ${err.details}`)
      }
      const { code, message } = err as NodeJS.ErrnoException
      const line = String(message ?? err).split('\n')[0] ?? ''
      return result(null, code !== undefined && !line.includes(code) ? `${code}: ${line}` : line)
    }
  }

  /** The system's authorities and WEBHOOK_CA_FILE's, read once; none given: Node's default. */
  private trusted(): string[] | undefined {
    const file = this.options.caFile
    if (file === undefined) return undefined
    if (this.ca === undefined) {
      try {
        this.ca = [...rootCertificates, readFileSync(file, 'utf8')]
      } catch (err) {
        throw new Error(`WEBHOOK_CA_FILE cannot be read: ${systemReason(err)}`)
      }
    }
    return this.ca
  }
}
