import type { RateLimiter, RateLimitResult } from '../ratelimit/limiter.js'
import type { Validation } from '../tokens/validator.js'
import type { LimitState } from './checkpoint.js'
import type { Applied, LimitBook } from './limits.js'

/**
 * Rate-limit leases for verifiers (docs/ratelimits.md): a block of a token's limits taken off
 * the shared count, for `@tessera/verifier` to spend in process as it spends credit leases. The
 * block comes from the same count as Tessera's own verifications (the rate limiter's key of each
 * limit), so every verifier and every instance share one exact count: passes never exceed a
 * limit. A block is never more than what is left, and ends with its window; what a verifier
 * leaves of it is lost then (refusals may come early by at most the unspent blocks, never late).
 */

/** What a limit lease reads: the limits of a token and the shared count. */
export interface LeaseDeps {
  checkpoint: { readonly book: LimitBook }
  rateLimiter: RateLimiter
  tokens: { validate(token: string): Validation | Promise<Validation>; now(): number }
}

/** One limit of a lease: where its window stands, and the block taken of it. */
export interface LeasedLimit extends LimitState {
  /** Units taken off the count for the verifier: the verifications granted times its cost. */
  readonly granted: number
}

/** A lease: `granted` verifications of every limit (0: `refused` has too little left). */
export interface LimitLease {
  readonly granted: number
  readonly limits: readonly LeasedLimit[]
  /** The first limit that had less than one verification's cost left, when nothing was granted. */
  readonly refused?: Applied
  /** The window's time, epoch ms: each limit's block ends at its `reset`. */
  readonly at: number
}

/** A token that is not valid now: nothing is granted. */
export interface NoLease {
  readonly code: Exclude<Validation['code'], 'TokenValid'>
}

/** Tries of a take when the shared count has less than this process knew (each asks less). */
const rounds = 4

const settle = <T>(values: (T | Promise<T>)[]): T[] | Promise<T[]> =>
  values.some((v) => v instanceof Promise) ? Promise.all(values) : (values as T[])

/**
 * Every limit as it stands, counting nothing (a cost-0 hit): what introspection shows a
 * verifier, which takes its passes from leases.
 */
export async function peekLimits(
  limiter: RateLimiter,
  list: readonly Applied[],
  at: number,
): Promise<LimitState[]> {
  const results = await settle(list.map((a) => limiter.hit(a.key, at, a.rule, 0)))
  return list.map((applied, i) => ({ applied, result: results[i] as RateLimitResult }))
}

/** How many verifications `result` still holds of a limit costing `cost` each. */
const holds = (result: RateLimitResult, cost: number) =>
  cost === 0
    ? result.remaining > 0
      ? Number.POSITIVE_INFINITY
      : 0
    : Math.floor(result.remaining / cost)

/**
 * A block of up to `want` verifications of each of a token's limits, taken off the shared count:
 * the same number of each (a verification takes every limit's cost), never more than the least
 * any limit has left, and nothing at all when one has less than one verification's cost.
 */
export async function leaseLimits(
  deps: LeaseDeps,
  token: string,
  want: number,
): Promise<LimitLease | NoLease> {
  const validation = await deps.tokens.validate(token)
  if (validation.code !== 'TokenValid') return { code: validation.code }
  const { list } = deps.checkpoint.book.gateOf(validation.principal, validation.account)
  const at = deps.tokens.now()
  let states = await peekLimits(deps.rateLimiter, list, at)
  let n = Math.min(want, ...states.map((s) => holds(s.result, s.applied.cost)))
  for (let round = 0; round < rounds && n > 0; round++) {
    const taken = await take(deps.rateLimiter, list, n, at)
    states = taken.states
    if (taken.allowed) return { granted: n, limits: states.map((s) => leased(s, n)), at }
    // The shared count had less than this process knew: ask what each refusal says is left.
    n = Math.min(n - 1, ...states.map((s) => holds(s.result, s.applied.cost)))
  }
  const refused = states.find((s) => holds(s.result, s.applied.cost) < 1)?.applied
  return {
    granted: 0,
    limits: states.map((s) => leased(s, 0)),
    ...(refused === undefined ? {} : { refused }),
    at,
  }
}

const leased = (s: LimitState, n: number): LeasedLimit => ({ ...s, granted: n * s.applied.cost })

/**
 * Takes `n` verifications of every limit; when one refuses, gives back what the others took
 * (one refused lease consumes none) and says what each had left.
 */
async function take(limiter: RateLimiter, list: readonly Applied[], n: number, at: number) {
  const results = await settle(list.map((a) => limiter.hit(a.key, at, a.rule, n * a.cost)))
  const allowed = results.every((r) => r.allowed)
  const states = list.map((applied, i) => {
    const result = results[i] as RateLimitResult
    if (allowed || !result.allowed || applied.cost === 0) return { applied, result }
    limiter.refund(applied.key, at, applied.rule, n * applied.cost)
    const remaining = Math.min(result.limit, result.remaining + n * applied.cost)
    return { applied, result: { ...result, remaining } }
  })
  return { allowed, states }
}
