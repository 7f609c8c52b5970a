/**
 * Fixed windows aligned to the epoch (every `intervalS` seconds), so that the reset time is the
 * same wherever it is computed. One interface; the in-memory implementation counts per process.
 */
export interface RateLimitResult {
  allowed: boolean
  limit: number
  /** Epoch seconds at which the current window ends. */
  reset: number
}

export interface RateLimiter {
  readonly limit: number
  readonly intervalS: number
  hit(key: string, nowMs: number): Promise<RateLimitResult> | RateLimitResult
  close(): Promise<void>
}

/** The contract's window: 60 seconds (X-Rate-Limit-Interval). */
export const intervalS = 60

export const windowOf = (nowMs: number, intervalS: number) => Math.floor(nowMs / 1000 / intervalS)

export class MemoryRateLimiter implements RateLimiter {
  private window = -1
  private counts = new Map<string, number>()

  constructor(
    readonly limit: number,
    readonly intervalS = 60,
  ) {}

  hit(key: string, nowMs: number): RateLimitResult {
    const window = windowOf(nowMs, this.intervalS)
    if (window !== this.window) {
      // A new window: every count of the last one is obsolete at once.
      this.window = window
      this.counts.clear()
    }
    const count = (this.counts.get(key) ?? 0) + 1
    this.counts.set(key, count)
    return { allowed: count <= this.limit, limit: this.limit, reset: (window + 1) * this.intervalS }
  }

  async close() {}
}
