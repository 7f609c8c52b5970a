import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../context.js'
import type { AccountRecord } from '../db/repositories.js'
import { ApiError } from '../errors.js'
import { intervalS, type RateLimitResult } from '../ratelimit/limiter.js'
import { type Principal, rateKeyOf } from '../tokens/principal.js'
import type { Validation } from '../tokens/validator.js'
import { outcomeIndex } from '../usage/outcomes.js'
import { refusal, type Valid } from './ahead/admission.js'
import { handedOver } from './ahead/handover.js'

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

export const rateLimitHeaders = [
  'X-Rate-Limit-Interval',
  'X-Rate-Limit-Limit',
  'X-Rate-Limit-Reset',
  'Retry-After',
]

/** Where the rate limit's headers go: a Fastify reply, or the fast path's header list. */
export interface HeaderSink {
  headers(values: Record<string, string>): unknown
  header(name: string, value: string): unknown
}

/**
 * Counts one request against `key` and sets the contract's headers; past the limit, refuses it
 * with 429 unless `enforce` is false (a request already refused for another reason).
 */
export function rateLimit(
  ctx: AppContext,
  reply: HeaderSink,
  key: string,
  enforce = true,
): void | Promise<void> {
  const now = ctx.tokens.now()
  const result = ctx.rateLimiter.hit(key, now)
  // No closure when the limiter answers at once (the memory limiter, Redis's warm path).
  return result instanceof Promise
    ? result.then((r) => applyLimit(ctx, reply, r, now, enforce))
    : applyLimit(ctx, reply, result, now, enforce)
}

const intervalText = String(intervalS)
// The limit and the window's end change rarely: their texts are kept, not made per request.
let lastLimit = -1
let lastLimitText = ''
let lastReset = -1
let lastResetText = ''
const limitText = (limit: number) => {
  lastLimit = limit
  lastLimitText = String(limit)
  return lastLimitText
}
const resetText = (reset: number) => {
  lastReset = reset
  lastResetText = String(reset)
  return lastResetText
}

function applyLimit(
  ctx: AppContext,
  reply: HeaderSink,
  result: RateLimitResult,
  now: number,
  enforce: boolean,
) {
  const { allowed, limit, reset } = result
  if (allowed) ctx.metrics.rateLimit.allowed++
  else ctx.metrics.rateLimit.limited++
  // Lowercase names and string values (see app.ts): headers are dear on this path.
  reply.headers({
    'x-rate-limit-interval': intervalText,
    'x-rate-limit-limit': limit === lastLimit ? lastLimitText : limitText(limit),
    'x-rate-limit-reset': reset === lastReset ? lastResetText : resetText(reset),
  })
  if (allowed || !enforce) return
  reply.header('retry-after', String(Math.max(1, reset - Math.floor(now / 1000))))
  throw new ApiError('tooManyRequests')
}

/**
 * `rateLimit` on a valid token's account, metering the request rate_limited when it refuses it
 * with 429; the caller meters any other answer, so that a request counts once.
 */
export function meteredLimit(ctx: AppContext, sink: HeaderSink, validation: Valid) {
  let limited: void | Promise<void>
  try {
    limited = rateLimit(ctx, sink, rateKeyOf(validation.principal))
  } catch (err) {
    return limitRefused(ctx, validation, err)
  }
  // Allowed at once (the common path): nothing made but the result.
  if (limited === undefined) return
  return limited.catch((err: unknown) => limitRefused(ctx, validation, err))
}

function limitRefused(ctx: AppContext, validation: Valid, err: unknown): never {
  if (err instanceof ApiError && err.kind === 'tooManyRequests') {
    ctx.usage.countValidation(validation, outcomeIndex.rate_limited)
  }
  throw err
}

export const accessToken = (request: FastifyRequest): string | undefined => {
  const value = (request.query as { access_token?: unknown }).access_token
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** Goes on with `value` now when it is at hand, or once it settles: no promise on a warm path. */
export const andThen = <T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> =>
  value instanceof Promise ? (value.then(next) as Promise<R>) : next(value)

/**
 * The contract's order of checks for every authenticated route: token valid (401), rate limit
 * (429), user exists (404 No such user), token of that user holding the scope (404 Not found).
 * Runs on request, before the body is read; synchronous when the token and account are known.
 */
export function guard(ctx: AppContext) {
  const check = (request: FastifyRequest, reply: FastifyReply) => {
    const token = accessToken(request)
    // A fast path may have validated it already (ahead/create.ts): once a request.
    const validation =
      token === undefined ? undefined : (handedOver(request.raw) ?? ctx.tokens.validate(token))
    return andThen(validation, (validation) => admit(ctx, request, reply, validation))
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
) {
  if (validation !== undefined) ctx.metrics.validated(validation)
  const { username } = request.params as { username: string }
  const scope = request.routeOptions.config.scope as string
  const refused = refusal(validation, username, scope, request.ip)
  if (refused === 'unauthorized') {
    if (validation !== undefined) {
      const valid = validation.code === 'TokenValid'
      ctx.usage.countValidation(validation, valid ? outcomeIndex.ip_not_allowed : undefined)
    }
    return andThen(rateLimit(ctx, reply, `ip:${request.ip}`, false), () => {
      throw new ApiError('unauthorized')
    })
  }
  // Any other refusal, or none, comes of a valid token.
  const valid = validation as Valid
  const { principal } = valid
  return andThen(meteredLimit(ctx, reply, valid), () => {
    ctx.usage.countValidation(valid, refused === undefined ? undefined : outcomeIndex.scope_missing)
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
