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
 * with a body of a `Content-Length` within the limit, reads the body, and answers the request
 * itself only when it is the plain case: a JSON body that the route's schema accepts, without
 * `expires`, made with a cached sk of that account holding `tokens:write`, from an address its
 * IP ranges allow. Then it goes the route's way exactly (rate limit, account, create) and
 * answers as the route does: same headers in the same order, same body, metrics and log lines,
 * the same errors (429, 503 and the create's own 422s). Anything else goes to Fastify with the
 * body it read (`replayBody` in handover.ts) before anything is counted, except the token's validation, which
 * the guard takes over (`handedOver`): temporary tokens, bodies that are not valid JSON or not
 * the schema's, tokens not cached, not valid, of another kind, account or scope, and every
 * request the retrieve fast path leaves to Fastify (not ready, shedding, closing, behind a
 * proxy, logged behind a proxy).
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

  /** At the body's end: answers here, or hands the request to Fastify with its body. */
  const whole = (
    req: IncomingMessage,
    res: ServerResponse,
    fastify: Listener,
    start: number,
    username: string,
    token: string,
    raw: Buffer,
  ) => {
    const handOver = () => {
      replays.set(req, raw)
      fastify(req, res)
    }
    let validation: Validation | Promise<Validation>
    let body: unknown
    try {
      if (o.refusing()) return handOver()
      body = plainBody(raw)
      if (body === undefined) return handOver()
      validation = ctx.tokens.validate(token)
    } catch {
      // Whatever failed is Fastify's to answer (a 500), the same way.
      return handOver()
    }

    if (validation instanceof Promise) {
      // Fastify's hooks may still refuse the request: a failed lookup is then nobody's.
      validation.catch(() => {})
      handedOver.set(req, validation)
      return handOver()
    }
    const ip = req.socket.remoteAddress
    if (validation.code !== 'TokenValid' || ip === undefined) {
      handedOver.set(req, validation)
      return handOver()
    }
    const { principal } = validation
    if (
      principal.usage !== 'sk' ||
      principal.username !== username ||
      !principal.scopes.has(scope) ||
      (principal.allowedIps !== undefined && !principal.allowedIps(ip))
    ) {
      handedOver.set(req, validation)
      return handOver()
    }

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
    create().then((answer) => {
      headers.header('content-type', json)
      send(200, answer)
    }, fail)
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
    // A body of a known length within the limit: a longer or chunked one is Fastify's to refuse.
    const length = req.headers['content-length']
    if (length === undefined || req.headers['transfer-encoding'] !== undefined) return false
    if (req.rawHeaders.length >= 2 * limits.maxHeaders) return false
    const bytes = Number(length)
    if (!(bytes > 0 && bytes <= limits.bodyBytes)) return false
    const token = o.parseQuery(url.slice(query + 1)).access_token
    if (token === undefined || token === '') return false

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
      whole(req, res, fastify, start, username, token, raw)
    })
    // A connection lost before the body is whole: nothing was counted, nothing is answered.
    req.on('error', () => {})
    return true
  }
}
