import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../context.js'
import type { AccountRecord } from '../db/repositories.js'
import { ApiError } from '../errors.js'
import { andThen } from '../then.js'
import type { Principal } from '../tokens/principal.js'
import type { Validation } from '../tokens/validator.js'
import { outcomeIndex } from '../usage/outcomes.js'
import { refusal, type Valid } from '../verification/admission.js'
import { requestFacts } from './facts.js'
import { handedOver } from './handover.js'
import { writeLimits } from './limit-headers.js'

export { andThen } from '../then.js'
export { type HeaderSink, rateLimitHeaders } from './limit-headers.js'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null
    account: AccountRecord | null
  }
  interface FastifyContextConfig {
    /** The scope an authenticated route requires; routes without one authenticate themselves. */
    scope?: string
  }
}

/** A request whose `access_token` query parameter and Authorization header differ. */
export const twoTokens = Symbol('two tokens')

/** What a request presents: a token string, none, or two that differ (`twoTokens`). */
export type Presented = string | undefined | typeof twoTokens

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750; the scheme in any case);
 * another scheme, or none after it, has none. Without a regular expression: the header is the
 * client's, up to the header size limit.
 */
function bearerToken(authorization: string): string | undefined {
  if (authorization.length < 8 || authorization[6] !== ' ') return undefined
  if (authorization.slice(0, 6).toLowerCase() !== 'bearer') return undefined
  const token = authorization.slice(7).trim()
  return token === '' ? undefined : token
}

/**
 * The token a request presents: the `access_token` query parameter (the contract's way), or
 * the bearer token of its Authorization header (Tessera's). Both may be given when they name the
 * same token; when they differ the request is refused (`twoTokens`) rather than acted on with
 * one of two credentials the caller may not have meant. Without an Authorization header this
 * costs one property read more than the query alone.
 */
export function presentedToken(request: FastifyRequest): Presented {
  const value = (request.query as { access_token?: unknown }).access_token
  const query = typeof value === 'string' && value !== '' ? value : undefined
  const authorization = request.headers.authorization
  if (authorization === undefined) return query
  const header = bearerToken(authorization)
  if (header === undefined || query === undefined || header === query) return query ?? header
  return twoTokens
}

/** Why a request that gave two different tokens is refused, as `details`. */
export const twoTokensDetails =
  'the access_token query parameter and the Authorization header name different tokens: give one'

/** Why a token API request is refused with 401, as `details` (its `message` is the contract's). */
const unauthorizedDetails = {
  none: 'no token: give it as the access_token query parameter or an Authorization: Bearer header',
  two: twoTokensDetails,
  TokenMalformed: 'the token is malformed: not a pk, sk or tk token string',
  TokenInvalid: "the token's signature is not valid",
  TokenExpired: 'the token has expired',
  TokenRevoked: 'the token was revoked (deleted, or its account is gone or disabled)',
  TokenValid: 'the token may not be used from this address',
} as const

/** RFC 6750 section 3.1: a request without a token is told only that one is needed. */
const challenges = {
  none: 'Bearer realm="tokens"',
  two: 'Bearer realm="tokens", error="invalid_request"',
  given: 'Bearer realm="tokens", error="invalid_token"',
} as const

/** The 401 of the token API, its challenge written to `reply`. */
function unauthorized(reply: FastifyReply, validation: Validation | undefined, two: boolean) {
  if (validation !== undefined) {
    reply.header('www-authenticate', challenges.given)
    return new ApiError('unauthorized', unauthorizedDetails[validation.code])
  }
  const cause = two ? 'two' : 'none'
  reply.header('www-authenticate', challenges[cause])
  return new ApiError('unauthorized', unauthorizedDetails[cause])
}

/**
 * The contract's order of checks for every authenticated route: token valid (401), rate limit
 * (429), user exists (404 No such user), token of that user holding the scope (404 Not found).
 * Runs on request, before the body is read; synchronous when the token and account are known.
 */
export function guard(ctx: AppContext) {
  const check = (request: FastifyRequest, reply: FastifyReply) => {
    const token = presentedToken(request)
    // A fast path may have validated it already (ahead/create.ts): once a request.
    const validation =
      typeof token === 'string'
        ? (handedOver(request.raw) ?? ctx.tokens.validate(token))
        : undefined
    const two = token === twoTokens
    return andThen(validation, (validation) => admit(ctx, request, reply, validation, two))
  }
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    let result: unknown
    try {
      result = check(request, reply)
    } catch (err) {
      return done(err as Error)
    }
    if (result instanceof Promise) result.then(() => done(), done)
    else done()
  }
}

/**
 * The guard's checks on a token's validation, in the contract's order (see `guard`). Metered
 * once a request with a token: its code's outcome when not valid; a valid token refused for its
 * address ip_not_allowed, with 429 rate_limited, for another account or a scope it lacks
 * scope_missing, else valid.
 */
function admit(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  validation: Validation | undefined,
  two: boolean,
) {
  if (validation !== undefined) ctx.metrics.validated(validation)
  const { username } = request.params as { username: string }
  const scope = request.routeOptions.config.scope as string
  const refused = refusal(validation, username, scope, request.ip)
  const facts = requestFacts(ctx, 'api', request, reply)
  if (refused === 'unauthorized') {
    const valid = validation?.code === 'TokenValid'
    const outcome = valid ? outcomeIndex.ip_not_allowed : undefined
    // Counted against the address, not enforced: the answer is 401 whatever the count.
    const counted = ctx.checkpoint.address(validation, request.ip, outcome, facts)
    return andThen(counted, (verdict) => {
      writeLimits(reply, verdict, false)
      throw unauthorized(reply, validation, two)
    })
  }
  // Any other refusal, or none, comes of a valid token.
  const valid = validation as Valid
  const { principal } = valid
  const passed = refused === undefined ? undefined : outcomeIndex.scope_missing
  return andThen(ctx.checkpoint.admit(valid, passed, facts), (verdict) => {
    writeLimits(reply, verdict)
    return andThen(ctx.accounts.find(username), (account) => {
      if (account === undefined) throw new ApiError('noSuchUser')
      if (refused === 'otherAccount') {
        throw new ApiError('notFound', 'the token belongs to another account')
      }
      if (refused === 'lacksScope') throw new ApiError('notFound', `the token lacks ${scope}`)
      request.principal = principal
      request.account = account
    })
  })
}
