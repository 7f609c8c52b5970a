/**
 * The arithmetic of a shared count's grant, the same in the primary's ledger (cluster.ts) and
 * Redis's Lua script (redis.ts), and what a counter promises (leases.ts explains leases).
 */

/**
 * Leases are never taken from the last `reserve` requests of a window: those are counted by the
 * shared counter one by one, so at limits up to `reserve + share` no instance ever holds an
 * unspent allowance.
 */
export const leaseReserve = 10
/** A lease takes at most 1/share of what is left above the reserve. */
export const leaseShare = 4
/** And at most this many requests. */
export const leaseMax = 4096
/** The request rate is counted in buckets of this length; a lease is about half a bucket's worth. */
export const bucketMs = 100
/** Below this many requests in a bucket (80 a second) an account gets no lease. */
export const leaseMinRate = 8

/**
 * What a shared counter grants, `used` of `limit` being spent in the window: up to `demand`
 * requests of what is left, plus a lease of at most `want` more, sized from what is left above
 * the reserve. The caller adds the grant to `used`, in the same atomic step. Redis runs the same
 * arithmetic as a Lua script (src/ratelimit/redis.ts): the two must stay alike.
 */
export function grantOf(
  used: number,
  limit: number,
  demand: number,
  want: number,
  reserve: number,
  share: number,
): number {
  const left = limit - used
  if (left <= 0) return 0
  const grant = Math.min(demand, left)
  const extra = Math.min(want, Math.floor((left - grant - reserve) / share))
  return Math.max(0, extra > 0 ? grant + extra : grant)
}

/** What a shared counter answers a take: the grant, and the window's count after it. */
export interface Grant {
  grant: number
  used: number
}

/** A count shared by every process that leases from it: Redis, or the primary's ledger. */
export interface LeaseCounter {
  /** Whether a take may be tried now; while not, the limiter counts in process. */
  readonly ready: boolean
  /** Applies `grantOf` to `key` (which includes the window) atomically. */
  take(key: string, ttlS: number, limit: number, demand: number, want: number): Promise<Grant>
  close(): Promise<void>
}
