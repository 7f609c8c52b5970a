import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { FastifyBaseLogger } from 'fastify'
import type { AppContext } from '../context.js'
import type { ApiError } from '../errors.js'
import type { HeaderSink } from './guard.js'
import { handedOver } from './handover.js'
import { limits } from './limits.js'
import { answerInvalid, answerValid } from './routes/retrieve.js'

export type Listener = (req: IncomingMessage, res: ServerResponse) => void

export interface FastPathOptions {
  ctx: AppContext
  /** The query parser of the router: the fast path reads the token the way the route does. */
  parseQuery(query: string): Record<string, string>
  /** The headers every response starts with (CORS), lowercase. */
  cors: Record<string, string>
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

const json = 'application/json; charset=utf-8'

/**
 * True when a request comes with no body: no Content-Length (or 0) and no Transfer-Encoding.
 * Node 20's parser frames a request by all of its headers, `req.headers` holds the first
 * `maxHeaders` only: a request with as many or more is not known to be without a body (Node 22
 * and later refuse one with more, 431).
 */
export const bodiless = (req: IncomingMessage) => {
  if (req.rawHeaders.length >= 2 * limits.maxHeaders) return false
  const length = req.headers['content-length']
  return (length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined
}

/**
 * Retrieve, answered ahead of Fastify. It is every customer's hot path, and Fastify's own work
 * on a request (its request and reply objects, routing, hooks, schema checks) costs more than
 * everything Tessera does to validate a token. The fast path takes `GET /tokens/v2?…` with a
 * token whose validation needs no waiting (a pk or sk whose record is cached, a tk, a string
 * that is no token) when nothing would refuse the request first, and answers exactly as the
 * route does: same headers in the same order, same body, same log lines and metrics (a
 * differential test holds it to that). Everything else goes on to Fastify before anything is
 * counted: no token, other spellings of the path, HEAD, requests while not ready, shedding or
 * closing, plain HTTP behind a proxy that requires HTTPS, logged requests behind a proxy; and a
 * token that needs the database, or is not valid behind a proxy, whose validation the route
 * takes over (`handedOver`) rather than repeats.
 */
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
}

/**
 * What the fast paths share: the request logger (Fastify's own, when requests are logged and no
 * proxy's forwarded address is needed), and whether a request must be timed.
 */
export function fastPathBase(o: FastPathOptions) {
  const { ctx } = o
  const cors = Object.entries(o.cors).flat()
  const requests = ctx.config.metrics === undefined ? undefined : ctx.metrics.requests
  // With a proxy in front, the logged address is the client's from X-Forwarded-For: Fastify's.
  const logs = o.requestLog !== undefined && !o.trustProxy ? o.requestLog : undefined
  const timed = requests !== undefined || logs !== undefined
  return {
    /** Requests are logged, and only Fastify can log them (behind a proxy). */
    fastifyLogs: o.requestLog !== undefined && logs === undefined,
    timed,
    /**
     * From here on the request is counted, so it is answered here whatever happens: its log's
     * first line now, its metrics and last line once the answer is out.
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
      const headers = new Headers(cors)
      const send = (status: number, body: string) => {
        headers.header('content-length', String(Buffer.byteLength(body)))
        res.writeHead(status, headers.list)
        res.end(body)
        // As Fastify: counted and logged once the answer is out, never for a connection lost.
        if (timed) {
          res.once('finish', () => {
            const elapsed = performance.now() - start
            requests?.observe(method, route, status, elapsed)
            log?.info({ res: { statusCode: status }, responseTime: elapsed }, 'request completed')
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
        headers.header('content-type', json)
        send(error.statusCode, JSON.stringify(error.toJSON()))
      }
      return { requestId, headers, send, fail }
    },
  }
}

/** A request listener ahead of Fastify: true when it took the request, else Fastify gets it. */
export type FastPath = (req: IncomingMessage, res: ServerResponse, fastify: Listener) => boolean

export function retrieveFastPath(o: FastPathOptions): FastPath {
  const { ctx } = o
  const base = fastPathBase(o)
  const { timed } = base
  return (req, res) => {
    const { url } = req
    if (req.method !== 'GET' || url === undefined || !url.startsWith('/tokens/v2?')) return false
    if (base.fastifyLogs) return false
    // Fastify times a request from before its hooks: parsing and validation included.
    const start = timed ? performance.now() : 0
    if (o.refusing()) return false
    if (o.trustProxy && req.headers['x-forwarded-proto'] !== 'https') return false
    const token = o.parseQuery(url.slice(11)).access_token
    if (token === undefined || token === '') return false
    const validation = ctx.tokens.validate(token)
    // Behind a proxy, a token not valid is counted against the client's address from
    // X-Forwarded-For: Fastify's to work out.
    if (validation instanceof Promise || (o.trustProxy && validation.code !== 'TokenValid')) {
      // Fastify's hooks may still refuse the request: a failed lookup is then nobody's.
      if (validation instanceof Promise) validation.catch(() => {})
      handedOver.set(req, validation)
      return false
    }

    // A request without a body is taken as read now. Left unread, Node drains it once the
    // answer is out (IncomingMessage._dump), which costs seven process.nextTick calls a request
    // where this leaves none; a body is still left to Node to drain (docs/performance.md). The
    // request then never emits 'end' or 'close' (nothing here listens for them); the response
    // still closes, and a connection lost meanwhile still destroys the request.
    if (bodiless(req)) req.read()
    const { headers, send, fail } = base.answering(req, res, 'GET', '/tokens/v2', start)
    try {
      const body =
        validation.code === 'TokenValid'
          ? answerValid(ctx, validation, headers)
          : answerInvalid(ctx, validation, req.socket.remoteAddress, headers)
      if (body instanceof Promise) {
        body.then((b) => send(200, b), fail).catch(() => res.destroy())
      } else send(200, body)
    } catch (err) {
      fail(err)
    }
    return true
  }
}

/**
 * Puts `fast` in front of the server's request listener, Fastify's: a request it does not take
 * goes on to Fastify unchanged (or later, through the listener it is given). Fastify adds
 * exactly one listener; anything else is refused here rather than bypassed.
 */
export function inFront(server: Server, fast: FastPath) {
  const listeners = server.listeners('request') as Listener[]
  const [fastify] = listeners
  if (listeners.length !== 1 || fastify === undefined) {
    throw new Error(`the server has ${listeners.length} request listeners, not Fastify's alone`)
  }
  const next: Listener = (req, res) => fastify.call(server, req, res)
  server.removeAllListeners('request')
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!fast(req, res, next)) next(req, res)
  })
}
