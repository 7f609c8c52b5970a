import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../context.js'
import type { AccountRecord } from '../db/repositories.js'
import { ApiError } from '../errors.js'
import { andThen } from '../then.js'
import type { Principal } from '../tokens/principal.js'
import type { Validation } from '../tokens/validator.js'
import { outcomeIndex } from '../usage/outcomes.js'
import { refusal, type Valid } from '../verification/admission.js'
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

export const accessToken = (request: FastifyRequest): string | undefined => {
  const value = (request.query as { access_token?: unknown }).access_token
  return typeof value === 'string' && value !== '' ? value : undefined
}

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
    const valid = validation?.code === 'TokenValid'
    const outcome = valid ? outcomeIndex.ip_not_allowed : undefined
    // Counted against the address, not enforced: the answer is 401 whatever the count.
    return andThen(ctx.checkpoint.address(validation, request.ip, outcome), (verdict) => {
      writeLimits(reply, verdict, false)
      throw new ApiError('unauthorized')
    })
  }
  // Any other refusal, or none, comes of a valid token.
  const valid = validation as Valid
  const { principal } = valid
  const passed = refused === undefined ? undefined : outcomeIndex.scope_missing
  return andThen(ctx.checkpoint.admit(valid, passed), (verdict) => {
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
