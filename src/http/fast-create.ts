import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Static } from '@sinclair/typebox'
import type { Actor } from '../audit/events.js'
import type { AccountRecord } from '../db/repositories.js'
import { ApiError } from '../errors.js'
import { jsonString } from '../json.js'
import { type Principal, rateKeyOf } from '../tokens/principal.js'
import type { Validation } from '../tokens/validator.js'
import { principalActor } from './actor.js'
import { type FastPath, type FastPathOptions, fastPathBase, type Listener } from './fast-path.js'
import { type HeaderSink, rateLimit } from './guard.js'
import { handedOver, replays } from './handover.js'
import { limits } from './limits.js'
import { CreateBody } from './schemas.js'
import { parseBody, validatorCompiler } from './validation.js'

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
 * Create, answered ahead of Fastify, as retrieve is (see fast-path.ts): a create costs Fastify's
 * request and reply, router, four hooks, body parser, two schema checks and serializer besides
 * Tessera's own work. It takes `POST /tokens/v2/<name>?access_token=…` with a JSON body of a
 * known length within the limit when the token is one Fastify's guard would let through as it
 * is: a string verified before, an sk of that account holding `tokens:write`, cached, from an
 * address its IP ranges allow (looked at without counting it). Everything else goes to Fastify
 * before the body is read: other tokens, types, framings, spellings of the path, and every
 * request the retrieve fast path leaves to Fastify (not ready, shedding, closing, logged behind
 * a proxy; and here any request behind a proxy, whose client address, which goes into the audit
 * event, is Fastify's to work out). A request taken is then answered here whatever its body,
 * as Fastify's guard and route answer it: the token validated and counted, the rate limit and
 * its headers, the account, the body parsed and checked by the same parser and schema, the
 * create of a permanent or a temporary token; the same headers in the same order, the same
 * body, metrics and log lines, the error handler's answers. Only a token changed while the
 * body came (revoked, narrowed) goes to Fastify then, with the body read (`replayBody` in
 * handover.ts) and the validation made (`handedOver`), so that it counts once. A client that
 * leaves with its body half sent is not counted, where Fastify would have counted it against
 * the rate limit before reading the body.
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

  /** A validation that lets this request's create go the plain way. */
  const plain = (validation: Validation, username: string, ip: string): validation is Valid =>
    validation.code === 'TokenValid' &&
    validation.principal.usage === 'sk' &&
    validation.principal.username === username &&
    validation.principal.scopes.has(scope) &&
    (validation.principal.allowedIps === undefined || validation.principal.allowedIps(ip))

  /**
   * The route's handler from its body on, as Fastify runs it after the guard: the body parser
   * (app.ts), the check that only an sk makes a permanent token (met), the schema, then the
   * create. Its answer as JSON text: a permanent token's document, or a temporary token in the
   * response schema's order of fields.
   */
  const created = async (
    account: AccountRecord,
    principal: Principal,
    raw: Buffer,
    actor: Actor,
    headers: HeaderSink,
  ): Promise<string> => {
    let body: unknown
    try {
      body = parseBody(raw.toString('utf8'))
    } catch (err) {
      // As Fastify after a body its parser refused: the connection closes (the client may send
      // more), the refusal going out before it.
      headers.header('connection', 'close')
      throw err
    }
    if (checkBody(body).error !== undefined) throw new ApiError('invalidResources')
    const input = body as Static<typeof CreateBody>
    if (input.expires === undefined) return ctx.tokens.createJson(account, principal, input, actor)
    const t = await ctx.tokens.createTemporary(
      account,
      principal,
      { ...input, expires: input.expires },
      actor,
    )
    return `{"token":${jsonString(t.token)},"issued_at":${jsonString(t.issued_at)},"expires":${jsonString(t.expires)},"expires_in":${JSON.stringify(t.expires_in)}}`
  }

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
    // Counted here: once a request, here or by the guard it is handed to.
    let validation: Validation | Promise<Validation>
    try {
      validation = ctx.tokens.validate(token)
    } catch {
      // Fastify's to answer (a 500), the same way.
      replays.set(req, raw)
      return fastify(req, res)
    }
    // Changed while the body came (revoked, narrowed, no longer cached): the guard's to answer,
    // with the body read and the validation made.
    if (validation instanceof Promise || !plain(validation, username, ip)) {
      // Fastify's hooks may still refuse the request: a failed lookup is then nobody's.
      if (validation instanceof Promise) validation.catch(() => {})
      handedOver.set(req, validation)
      replays.set(req, raw)
      return fastify(req, res)
    }
    const { principal } = validation

    // The guard's way from here (guard.ts), then the route's, whatever the body.
    const { requestId, headers, send, fail } = base.answering(req, res, 'POST', route, start)
    ctx.metrics.validated(validation)
    const create = async () => {
      await rateLimit(ctx, headers, rateKeyOf(principal))
      const account = await ctx.accounts.find(username)
      if (account === undefined) throw new ApiError('noSuchUser')
      const actor = principalActor(principal, ip, requestId())
      return created(account, principal, raw, actor, headers)
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
      if (read !== bytes) return res.destroy()
      const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, read)
      whole(req, res, fastify, start, username, token, ip, raw)
    })
    // A connection lost before the body is whole: nothing was counted, nothing is answered
    // (Fastify would have counted the request against the rate limit before reading it).
    req.on('error', () => {})
    return true
  }
}
