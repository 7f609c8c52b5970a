import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { FastifyBaseLogger } from 'fastify'
import type { AppContext } from '../../context.js'
import type { ApiError } from '../../errors.js'
import { countsRequests } from '../../metrics/http.js'
import type { Tracer } from '../../telemetry/index.js'
import type { RequestFacts, Source } from '../../verification/log.js'
import type { HeaderSink } from '../limit-headers.js'
import { limits } from '../limits.js'
import { verdictOf } from '../tracing.js'

export type Listener = (req: IncomingMessage, res: ServerResponse) => void

/** A request listener ahead of Fastify: true when it took the request, else Fastify gets it. */
export type FastPath = (req: IncomingMessage, res: ServerResponse, fastify: Listener) => boolean

export interface FastPathOptions {
  ctx: AppContext
  /** The query parser of the router: the fast path reads the token the way the route does. */
  parseQuery(query: string): Record<string, string>
  /**
   * The headers every answer starts with, lowercase, as Fastify's first hook sets them
   * (http/headers.ts `firstHeaders`: CORS, nosniff, HSTS over HTTPS).
   */
  first: Record<string, string>
  /** True while Fastify's checks would refuse a request: not ready, shedding, closing. */
  refusing(): boolean
  /** Requests only over HTTPS, as the load balancer says (TRUST_PROXY). */
  trustProxy: boolean
  /** The request logger (Fastify's own), when requests are logged. */
  requestLog: FastifyBaseLogger | undefined
  requestId(req: IncomingMessage): string
  /** What the error handler answers to `error`, after logging it as the handler does. */
  errorOf(error: unknown, log: FastifyBaseLogger | undefined): ApiError
}

export const jsonType = 'application/json; charset=utf-8'

/**
 * The headers of one answer, in the order Fastify would write them, as the flat list of names
 * and values `writeHead` takes: Node walks a list faster than an object's keys.
 */
export class Headers implements HeaderSink {
  readonly list: string[]
  constructor(first: readonly string[]) {
    this.list = first.slice()
  }
  headers(values: Record<string, string>) {
    for (const name in values) this.list.push(name, values[name] as string)
  }
  header(name: string, value: string) {
    this.list.push(name, value)
  }
  /** Takes out `name` (as Fastify's error handler drops the content headers of the answer). */
  drop(name: string) {
    const at = this.list.indexOf(name)
    if (at !== -1 && at % 2 === 0) this.list.splice(at, 2)
  }
}

/**
 * True when a request comes with no body: no Content-Length (or 0) and no Transfer-Encoding.
 * `req.headers` holds only the first `maxHeaders` of them, so a request with more may hide one.
 */
export const bodiless = (req: IncomingMessage) => {
  if (req.rawHeaders.length >= 2 * limits.maxHeaders) return false
  const length = req.headers['content-length']
  return (length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined
}

/**
 * How a request taken ahead of Fastify is answered: headers in Fastify's order, then the status
 * and body; counted in the request metrics and logged once the answer is out, as Fastify does;
 * an error answered as the error handler answers it.
 */
export interface Answering {
  /** The request's id (Fastify's genReqId), made once when first asked for. */
  requestId(): string
  headers: Headers
  send(status: number, body: string): void
  fail(err: unknown): void
  /** What the verification log (and the request's span) take of it; none when neither does. */
  facts(source: Source, ip: string | undefined): RequestFacts | undefined
}

/**
 * What the fast paths share: the request logger (Fastify's own, when requests are logged and no
 * proxy's forwarded address is needed), and whether a request must be timed.
 */
export function fastPathBase(o: FastPathOptions) {
  const first = Object.entries(o.first).flat()
  const requests = countsRequests(o.ctx.config) ? o.ctx.metrics.requests : undefined
  // With a proxy in front, the logged address is the client's from X-Forwarded-For: Fastify's.
  const logs = o.requestLog !== undefined && !o.trustProxy ? o.requestLog : undefined
  // The verification log takes each request's time to its decision (verification/log.ts).
  const logging = o.ctx.verifications.log.mode !== 'off'
  const tracer = o.ctx.telemetry?.tracer
  // Counted and logged once the answer is out (a listener a request): metrics or request logs.
  const observed = requests !== undefined || logs !== undefined
  const timed = observed || logging || tracer !== undefined
  return {
    /** Requests are logged, and only Fastify can log them (behind a proxy). */
    fastifyLogs: o.requestLog !== undefined && logs === undefined,
    timed,
    /**
     * From here on the request is counted, so it is answered here whatever happens: its log's
     * first line now (and its span's start), its metrics, last line and span's end once the
     * answer is out.
     */
    answering(
      req: IncomingMessage,
      res: ServerResponse,
      method: string,
      route: string,
      start: number,
    ): Answering {
      let id: string | undefined
      const requestId = () => {
        id ??= o.requestId(req)
        return id
      }
      const log = logs?.child({ reqId: requestId() })
      log?.info({ req: { method, url: req.url, ip: req.socket.remoteAddress } }, 'incoming request')
      const span = tracer && spanOf(tracer, req, method, route, start)
      let facts: RequestFacts | undefined
      const headers = new Headers(first)
      const send = (status: number, body: string) => {
        headers.header('content-length', String(Buffer.byteLength(body)))
        res.writeHead(status, headers.list)
        res.end(body)
        // As Fastify: counted and logged once the answer is out, never for a connection lost.
        if (observed || span !== undefined) {
          res.once('finish', () => {
            const now = performance.now()
            requests?.observe(method, route, status, now - start)
            log?.info(
              { res: { statusCode: status }, responseTime: now - start },
              'request completed',
            )
            tracer?.end(span, tracer.clock(now), verdictOf(facts?.row), status)
          })
        }
      }
      const fail = (err: unknown) => {
        if (res.headersSent) {
          res.destroy()
          return
        }
        const error = o.errorOf(err, log)
        headers.drop('content-type')
        headers.drop('content-length')
        headers.header('content-type', jsonType)
        send(error.statusCode, JSON.stringify(error.toJSON()))
      }
      const factsOf = (source: Source, ip: string | undefined) => {
        if (!logging && tracer === undefined) return undefined
        const traced = span !== undefined
        facts = { source, ip, headers: req.headers, requestId, started: start, traced }
        return facts
      }
      return { requestId, headers, send, fail, facts: factsOf }
    },
  }
}

/** A request's server span, begun at `start` (performance.now()), continuing its traceparent. */
const spanOf = (
  tracer: Tracer,
  req: IncomingMessage,
  method: string,
  route: string,
  start: number,
) =>
  tracer.startSpan({
    traceparent: req.headers.traceparent,
    tracestate: req.headers.tracestate,
    startNs: tracer.clock(start),
    // Over HTTPS here, or to a proxy that said so (the fast path takes nothing else).
    attributes: { method, route, scheme: 'https', clientAddress: req.socket.remoteAddress },
  })

export type FastPathBase = ReturnType<typeof fastPathBase>
