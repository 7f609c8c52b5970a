import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { ApiError } from '../errors.js'
import { rateKeyOf } from '../tokens/principal.js'
import type { TokenFields } from '../tokens/service.js'
import type { Validation } from '../tokens/validator.js'
import { principalActor } from './actor.js'
import { type FastPath, type FastPathOptions, fastPathBase, type Listener } from './fast-path.js'
import { rateLimit } from './guard.js'
import { handedOver, replays } from './handover.js'
import { jsonDepthExceeds, limits } from './limits.js'
import { CreateBody } from './schemas.js'
import { validatorCompiler } from './validation.js'

type Valid = Extract<Validation, { code: 'TokenValid' }>

const route = '/tokens/v2/:username'
const scope = 'tokens:write'
const json = 'application/json; charset=utf-8'

/**
 * An account name the router takes as it is for `:username`: nothing to decode, no slash, within
 * its parameter length. Any other spelling is Fastify's.
 */
const plainName = /^[A-Za-z0-9._-]{1,64}$/

/**
 * Create of a permanent token, answered ahead of Fastify, as retrieve is (see fast-path.ts): a
 * create costs Fastify's request and reply, router, four hooks, body parser, two schema checks
 * and serializer besides Tessera's own work. It takes `POST /tokens/v2/<name>?access_token=…`
 * with a JSON body of a known length within the limit when the token is one the guard would let
 * through as it is (a string verified before, an sk of that account holding `tokens:write`,
 * cached, from an address its IP ranges allow; looked at without counting it), reads the body,
 * and answers the request itself when the body is a permanent token's that the route's schema
 * accepts (no `expires`). Then it goes the guard's and route's way exactly (the token validated
 * and counted, rate limit, account, create) and answers as the route does: same headers in the
 * same order, same body, metrics and log lines, the same errors (429, 503 and the create's own
 * 422s). Anything else goes to Fastify: at once, before the body is read (other tokens, types,
 * framings, spellings of the path, and every request the retrieve fast path leaves to Fastify:
 * not ready, shedding, closing, logged behind a proxy, and here any request behind a proxy,
 * whose client address is Fastify's to work out), or with the body it read (`replayBody` in
 * handover.ts) and nothing counted but the token's validation, which the guard takes over
 * (`handedOver`): a temporary token, a body not valid JSON or not the schema's, a token changed
 * while the body came. A client that leaves with its body half sent is not counted, where
 * Fastify would have counted it against the rate limit before reading the body.
 */
export function createFastPath(o: FastPathOptions): FastPath {
  const { ctx } = o
  const base = fastPathBase(o)
  const { timed } = base
  const checkBody = validatorCompiler({
    schema: CreateBody,
    method: 'POST',
    url: route,
    httpPart: 'body',
  }) as (value: unknown) => { error?: unknown }

  /**
   * The body as Fastify's body parser (app.ts) and the route's schema take it, when it is a
   * permanent token's: undefined for anything else, which is Fastify's to answer (after the
   * guard, as always).
   */
  const plainBody = (raw: Buffer): object | undefined => {
    const text = raw.toString('utf8')
    if (jsonDepthExceeds(text, limits.jsonDepth)) return undefined
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return undefined
    }
    if (typeof body !== 'object' || body === null || 'expires' in body) return undefined
    return checkBody(body).error === undefined ? body : undefined
  }

  /** A validation that lets this request's create go the plain way. */
  const plain = (validation: Validation, username: string, ip: string): validation is Valid =>
    validation.code === 'TokenValid' &&
    validation.principal.usage === 'sk' &&
    validation.principal.username === username &&
    validation.principal.scopes.has(scope) &&
    (validation.principal.allowedIps === undefined || validation.principal.allowedIps(ip))

  /** At the body's end: answers here, or hands the request to Fastify with its body. */
  const whole = (
    req: IncomingMessage,
    res: ServerResponse,
    fastify: Listener,
    start: number,
    username: string,
    token: string,
    ip: string,
    raw: Buffer,
  ) => {
    // What Fastify's guard would take as it is: the validation made here, and the body read.
    const handOver = (validation?: Validation | Promise<Validation>) => {
      if (validation !== undefined) handedOver.set(req, validation)
      replays.set(req, raw)
      fastify(req, res)
    }
    let body: object | undefined
    let validation: Validation | Promise<Validation> | undefined
    try {
      body = plainBody(raw)
      // Counted from here: once a request, here or by the guard it is handed to.
      if (body !== undefined) validation = ctx.tokens.validate(token)
    } catch {
      // Whatever failed is Fastify's to answer (a 500), the same way.
    }
    if (body === undefined || validation === undefined) return handOver()
    if (validation instanceof Promise) {
      // Fastify's hooks may still refuse the request: a failed lookup is then nobody's.
      validation.catch(() => {})
      return handOver(validation)
    }
    // Changed while the body came (revoked, its scopes narrowed): the guard's to answer.
    if (!plain(validation, username, ip)) return handOver(validation)
    const { principal } = validation

    // The guard's way from here (guard.ts), then the route's.
    const { requestId, headers, send, fail } = base.answering(req, res, 'POST', route, start)
    ctx.metrics.validated(validation)
    const create = async () => {
      await rateLimit(ctx, headers, rateKeyOf(principal))
      const account = await ctx.accounts.find(username)
      if (account === undefined) throw new ApiError('noSuchUser')
      const actor = principalActor(principal, ip, requestId())
      return ctx.tokens.createJson(account, principal, body as TokenFields, actor)
    }
    create()
      .then((answer) => {
        headers.header('content-type', json)
        send(200, answer)
      }, fail)
      .catch(() => res.destroy())
  }

  return (req, res, fastify) => {
    const { url } = req
    if (req.method !== 'POST' || url === undefined || !url.startsWith('/tokens/v2/')) return false
    const query = url.indexOf('?', 11)
    if (query === -1) return false
    const username = url.slice(11, query)
    if (!plainName.test(username)) return false
    if (base.fastifyLogs || o.trustProxy) return false
    const start = timed ? performance.now() : 0
    if (o.refusing()) return false
    const { headers } = req
    // JSON of a known length within the limit: any other type, a longer or a chunked body is
    // Fastify's to take or refuse.
    if (headers['content-type'] !== 'application/json') return false
    const length = headers['content-length']
    if (length === undefined || headers['transfer-encoding'] !== undefined) return false
    if (req.rawHeaders.length >= 2 * limits.maxHeaders) return false
    const bytes = Number(length)
    if (!(bytes > 0 && bytes <= limits.bodyBytes)) return false
    const token = o.parseQuery(url.slice(query + 1)).access_token
    const ip = req.socket.remoteAddress
    if (token === undefined || ip === undefined) return false
    // Fastify's guard checks the token before the body is read: the body is read here only for
    // a token the guard would let through (a string verified before, its record cached), so
    // every other request is answered by Fastify as early, and no one else's body is kept.
    const peeked = ctx.tokens.peek(token)
    if (peeked === undefined || !plain(peeked, username, ip)) return false

    const chunks: Buffer[] = []
    let read = 0
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      read += chunk.length
    })
    req.on('end', () => {
      // Node frames the body by its Content-Length: a shorter one ends as an abort, not here.
      if (read !== bytes) return
      const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, read)
      whole(req, res, fastify, start, username, token, ip, raw)
    })
    // A connection lost before the body is whole: nothing was counted, nothing is answered
    // (Fastify would have counted the request against the rate limit before reading it).
    req.on('error', () => {})
    return true
  }
}
