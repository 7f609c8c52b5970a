import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../context.js'
import type { AccountRecord } from '../db/repositories.js'
import { ApiError } from '../errors.js'
import { intervalS, type RateLimitResult } from '../ratelimit/limiter.js'
import type { Principal } from '../tokens/principal.js'

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

/**
 * Counts one request against `key` and sets the contract's headers; past the limit, refuses it
 * with 429 unless `enforce` is false (a request already refused for another reason).
 */
export function rateLimit(
  ctx: AppContext,
  reply: FastifyReply,
  key: string,
  enforce = true,
): void | Promise<void> {
  const now = ctx.tokens.now()
  const hit = ctx.rateLimiter.hit(key, now)
  if (hit instanceof Promise) return hit.then((result) => applyLimit(reply, result, now, enforce))
  applyLimit(reply, hit, now, enforce)
}

const intervalText = String(intervalS)

function applyLimit(reply: FastifyReply, result: RateLimitResult, now: number, enforce: boolean) {
  const { allowed, limit, reset } = result
  // Lowercase names and string values (see app.ts): headers are dear on this path.
  reply.headers({
    'x-rate-limit-interval': intervalText,
    'x-rate-limit-limit': String(limit),
    'x-rate-limit-reset': String(reset),
  })
  if (allowed || !enforce) return
  reply.header('retry-after', String(Math.max(1, reset - Math.floor(now / 1000))))
  throw new ApiError('tooManyRequests')
}

export const accessToken = (request: FastifyRequest): string | undefined => {
  const value = (request.query as { access_token?: unknown }).access_token
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * The contract's order of checks for every authenticated route: token valid (401), rate limit
 * (429), user exists (404 No such user), token of that user holding the scope (404 Not found).
 * Runs on request, before the body is read.
 */
export function guard(ctx: AppContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const scope = request.routeOptions.config.scope as string
    const token = accessToken(request)
    const validation = token === undefined ? undefined : await ctx.tokens.validate(token)
    if (validation?.code !== 'TokenValid') {
      await rateLimit(ctx, reply, `ip:${request.ip}`, false)
      throw new ApiError('unauthorized')
    }
    const { principal } = validation
    await rateLimit(ctx, reply, `user:${principal.username}`)
    const { username } = request.params as { username: string }
    const account = await ctx.accounts.find(username)
    if (account === undefined) throw new ApiError('noSuchUser')
    if (principal.username !== account.username) {
      throw new ApiError('notFound', 'the token belongs to another account')
    }
    if (!principal.scopes.has(scope)) throw new ApiError('notFound', `the token lacks ${scope}`)
    request.principal = principal
    request.account = account
  }
}
