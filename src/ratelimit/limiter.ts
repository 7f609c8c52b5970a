/**
 * Fixed windows aligned to the epoch (every `duration` milliseconds), so that a window's end is
 * the same wherever it is computed and one count per window is all a fleet shares
 * (docs/performance.md, "Rate limits"). One interface; the in-memory implementation counts per
 * process, the leasing ones (leases.ts) in Redis or the primary.
 */
export interface RateLimitResult {
  allowed: boolean
  limit: number
  /**
   * What is left of the window after this request, as this process knows it: exact in one
   * process; across processes, what the shared count said at its last answer less what this
   * process spent since (others' requests show at the next answer).
   */
  remaining: number
  /** Epoch milliseconds at which the current window ends. */
  reset: number
}

/** How much a window allows, and its length in milliseconds (1,000 to 86,400,000). */
export interface LimitRule {
  readonly limit: number
  readonly duration: number
}

export interface RateLimiter {
  /**
   * Counts `cost` (default 1) against `key` in the window of `rule`. A cost of 0 counts nothing
   * and passes while anything is left. The key must name the rule's duration, or be used with
   * one duration only (keys of two durations are different counts).
   */
  hit(
    key: string,
    nowMs: number,
    rule: LimitRule,
    cost?: number,
  ): Promise<RateLimitResult> | RateLimitResult
  /**
   * Gives back what a passed hit of the same window counted, when another limit refused the
   * request (one refused request consumes none). What cannot go back to a shared count stays
   * with this process to spend, so the shared count never allows more than the limit.
   */
  refund(key: string, nowMs: number, rule: LimitRule, cost: number): void
  close(): Promise<void>
}

/** The contract's window: 60 seconds (X-Rate-Limit-Interval). */
export const intervalS = 60

/** The window `nowMs` falls in, for windows of `durationMs`. */
export const windowOf = (nowMs: number, durationMs: number) => Math.floor(nowMs / durationMs)

/** The shortest and longest window a limit may have (milliseconds). */
export const durationBounds = { min: 1000, max: 86_400_000 } as const

interface Count {
  window: number
  /** Epoch ms at which the window ends. */
  end: number
  used: number
}

/**
 * Counts per process: one entry a key, dropped once its window has passed (swept at most once a
 * second, lazily: no timer to stop).
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, Count>()
  private sweepAt = 0

  hit(key: string, nowMs: number, rule: LimitRule, cost = 1): RateLimitResult {
    const { limit, duration } = rule
    const window = windowOf(nowMs, duration)
    if (nowMs >= this.sweepAt) this.sweep(nowMs)
    const reset = (window + 1) * duration
    let count = this.counts.get(key)
    if (count === undefined) {
      count = { window, end: reset, used: 0 }
      this.counts.set(key, count)
    } else if (count.window !== window) {
      count.window = window
      count.end = reset
      count.used = 0
    }
    const allowed = cost === 0 ? count.used < limit : count.used + cost <= limit
    // A refused request counts nothing: what it would have taken is still there for a cheaper one.
    if (allowed) count.used += cost
    return { allowed, limit, remaining: Math.max(0, limit - count.used), reset }
  }

  refund(key: string, nowMs: number, rule: LimitRule, cost: number): void {
    const count = this.counts.get(key)
    if (count !== undefined && count.window === windowOf(nowMs, rule.duration)) {
      count.used = Math.max(0, count.used - cost)
    }
  }

  /** Drops the counts of windows that have ended. */
  private sweep(nowMs: number) {
    this.sweepAt = nowMs + 1000
    for (const [key, count] of this.counts) if (count.end <= nowMs) this.counts.delete(key)
  }

  /** Keys held, for tests. */
  get size(): number {
    return this.counts.size
  }

  async close() {}
}
