import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Static } from '@sinclair/typebox'
import type { Actor } from '../../audit/events.js'
import type { AppContext } from '../../context.js'
import type { AccountRecord } from '../../db/repositories.js'
import { ApiError } from '../../errors.js'
import { jsonString } from '../../json.js'
import type { TemporaryResult } from '../../tokens/creation.js'
import type { Principal } from '../../tokens/principal.js'
import { asksTemporary, creationRefusal } from '../../tokens/rules.js'
import type { Validation } from '../../tokens/validator.js'
import { refusal, type Valid } from '../../verification/admission.js'
import { principalActor } from '../actor.js'
import { handOver, handOverBody } from '../handover.js'
import { type HeaderSink, writeLimits } from '../limit-headers.js'
import { limits } from '../limits.js'
import { CreateBody } from '../schemas.js'
import { parseBody, validatorCompiler } from '../validation.js'
import {
  type FastPath,
  type FastPathBase,
  type FastPathOptions,
  fastPathBase,
  jsonType,
  type Listener,
} from './base.js'

const route = '/tokens/v2/:username'
const scope = 'tokens:write'

/** An account name the router takes as it is for `:username`: no decoding, no slash. */
const plainName = /^[A-Za-z0-9._-]{1,64}$/

/** The `<name>` of `/tokens/v2/<name>?…` when the router takes it as it is; else undefined. */
function plainUsername(url: string): string | undefined {
  const query = url.indexOf('?', 11)
  if (query === -1) return undefined
  const username = url.slice(11, query)
  return plainName.test(username) ? username : undefined
}

/** The body's length when it is JSON of a known length within the limit, else 0 (Fastify's). */
function jsonLength(req: IncomingMessage): number {
  const { headers } = req
  if (headers['content-type'] !== 'application/json') return 0
  const length = headers['content-length']
  if (length === undefined || headers['transfer-encoding'] !== undefined) return 0
  if (req.rawHeaders.length >= 2 * limits.maxHeaders) return 0
  const bytes = Number(length)
  return bytes > 0 && bytes <= limits.bodyBytes ? bytes : 0
}

/** A token the guard lets through as it is, and an sk, which may create either kind of token. */
const plain = (
  validation: Validation | undefined,
  username: string,
  ip: string,
): validation is Valid =>
  refusal(validation, username, scope, ip) === undefined &&
  (validation as Valid).principal.usage === 'sk'

/**
 * Create, answered ahead of Fastify as its guard and route answer it, for the plain case only:
 * an sk the guard would let through as it is (docs/performance.md, "Create ahead of Fastify").
 */
export function createFastPath(o: FastPathOptions): FastPath {
  const base = fastPathBase(o)
  const whole = atBodyEnd(o.ctx, base)
  return (req, res, fastify) => {
    const { url } = req
    if (req.method !== 'POST' || url === undefined || !url.startsWith('/tokens/v2/')) return false
    const username = plainUsername(url)
    if (username === undefined) return false
    if (base.fastifyLogs || o.trustProxy) return false
    const start = base.timed ? performance.now() : 0
    if (o.refusing()) return false
    const bytes = jsonLength(req)
    if (bytes === 0) return false
    const token = o.parseQuery(url.slice(12 + username.length)).access_token
    const ip = req.socket.remoteAddress
    if (token === undefined || ip === undefined) return false
    // A token in the Authorization header as well: the guard's to compare (http/guard.ts).
    if (req.headers.authorization !== undefined) return false
    // The guard refuses a token before the body is read: only a body it would take is read
    // here, without counting the token's use yet.
    if (!plain(o.ctx.tokens.peek(token), username, ip)) return false

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
    // A connection lost before the body is whole: nothing was counted, nothing is answered.
    req.on('error', () => {})
    return true
  }
}

/** At the body's end: answers here, or hands the request to Fastify with its body. */
function atBodyEnd(ctx: AppContext, base: FastPathBase) {
  const created = creating(ctx)
  return (
    req: IncomingMessage,
    res: ServerResponse,
    fastify: Listener,
    start: number,
    username: string,
    token: string,
    ip: string,
    raw: Buffer,
  ) => {
    // Validated here once a request, then metered here or by the guard it is handed to.
    let validation: Validation | Promise<Validation>
    try {
      validation = ctx.tokens.validate(token)
    } catch {
      // Fastify's to answer (a 500), the same way.
      handOverBody(req, raw)
      return fastify(req, res)
    }
    // Changed while the body came (revoked, narrowed, no longer cached): the guard's to answer.
    if (validation instanceof Promise || !plain(validation, username, ip)) {
      handOver(req, validation)
      handOverBody(req, raw)
      return fastify(req, res)
    }
    const { principal } = validation
    // The guard's way from here (guard.ts), then the route's, whatever the body.
    const {
      requestId,
      headers,
      send,
      fail,
      facts: factsOf,
    } = base.answering(req, res, 'POST', route, start)
    ctx.metrics.validated(validation)
    const create = async () => {
      // Limited and counted as the guard does: rate_limited, or valid.
      const facts = factsOf('api', ip)
      writeLimits(headers, await ctx.checkpoint.admit(validation, undefined, facts))
      const account = await ctx.accounts.find(username)
      if (account === undefined) throw new ApiError('noSuchUser')
      const actor = principalActor(principal, ip, requestId())
      return created(account, principal, raw, actor, headers)
    }
    create()
      .then((answer) => {
        headers.header('content-type', jsonType)
        send(200, answer)
      }, fail)
      .catch(() => res.destroy())
  }
}

/**
 * The route's handler from its body on, as Fastify runs it after the guard: the body parser,
 * the check of what the token may create (creationRefusal), the schema, then the create. Its
 * answer as JSON text, a temporary token's fields in the response schema's order.
 */
function creating(ctx: AppContext) {
  const checkBody = validatorCompiler({
    schema: CreateBody,
    method: 'POST',
    url: route,
    httpPart: 'body',
  }) as (value: unknown) => { error?: ApiError }
  return async (
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
    // As the route's preValidation: what this token may create, before the schema.
    const refused = creationRefusal(principal, asksTemporary(body))
    if (refused !== undefined) throw refused
    const { error } = checkBody(body)
    if (error !== undefined) throw error
    const input = body as Static<typeof CreateBody>
    if (input.expires === undefined) return ctx.tokens.createJson(account, principal, input, actor)
    const t = await ctx.tokens.createTemporary(
      account,
      principal,
      { ...input, expires: input.expires },
      actor,
    )
    return temporaryJson(t)
  }
}

/** A temporary token's create answer, its fields in the response schema's order. */
export const temporaryJson = (t: TemporaryResult) =>
  `{"token":${jsonString(t.token)},"issued_at":${jsonString(t.issued_at)},"expires":${jsonString(t.expires)},"expires_in":${JSON.stringify(t.expires_in)}}`
