import type { Logger } from 'pino'
import { MemoryRateLimiter, type RateLimiter, type RateLimitResult, windowOf } from './limiter.js'

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
const bucketMs = 100
/** Below this many requests in a bucket (80 a second) an account gets no lease. */
const leaseMinRate = 8

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

/** A count shared by every process that leases from it: Redis, or the primary's ledger. */
export interface LeaseCounter {
  /** Whether a take may be tried now; while not, the limiter counts in process. */
  readonly ready: boolean
  /** Applies `grantOf` to `key` (which includes the window) atomically; returns the grant. */
  take(key: string, ttlS: number, limit: number, demand: number, want: number): Promise<number>
  close(): Promise<void>
}

/** How a limiter names its keys and, in its log lines, its counter and its own kind. */
export interface LeasingWords {
  /** Put before `rl:<window>:<key>`. */
  keyPrefix: string
  /** The counter, as a log line names it: "Redis", "the primary". */
  peer: string
  /** What counts on its own while the counter is away: "instance", "worker". */
  each: string
}

/** What one process knows of one key in the current window. */
interface Lease {
  key: string
  counterKey: string
  /** Epoch seconds at which the lease's window ends. */
  reset: number
  /** Requests granted by the counter to this process and not spent yet. */
  left: number
  /** Below this many left, a refill is asked for in the background. */
  lowWater: number
  refilling: boolean
  bucket: number
  current: number
  previous: number
  /** Requests waiting for this turn's round trip. */
  waiting: Waiting[]
}

interface Waiting {
  nowMs: number
  resolve: (result: RateLimitResult) => void
}

/**
 * Counts in a shared counter (Redis for instances, the primary for workers), without a round
 * trip on a busy account's hot path: a process takes a lease (a block of the window's remaining
 * count) in one atomic step and spends it locally. A lease is about 50 ms of the account's
 * recent rate in this process, at most a quarter of what is left above the last `leaseReserve`
 * requests, which are granted one by one; a refill is asked for in the background when half of
 * it is spent. A quiet account gets no lease: its requests of one turn share one round trip, as
 * each gets its own count.
 *
 * Exact where the contract needs it: the counter never grants more than the limit, so no more
 * than the limit pass in a window across the fleet. A request may be refused while fewer than
 * the limit have passed only while other processes hold unspent leases: by at most their sum,
 * never at limits up to `leaseReserve + leaseShare`. Leases end with their window.
 *
 * While the counter is unreachable it counts in process (each process then allows the limit on
 * its own), logs a warning once, and goes back to shared counting once the counter answers again.
 */
export class LeasingRateLimiter implements RateLimiter {
  private readonly local: MemoryRateLimiter
  private degraded = false
  /** Connection errors and failed takes, for /metrics. */
  errors = 0
  /** Round trips to the counter, for /metrics. */
  calls = 0
  private window = -1
  private reset = 0
  private leases = new Map<string, Lease>()
  private due: Lease[] = []
  private inFlight = 0

  constructor(
    private readonly counter: LeaseCounter,
    readonly limit: number,
    private readonly log: Logger,
    private readonly words: LeasingWords,
    readonly intervalS = 60,
  ) {
    this.local = new MemoryRateLimiter(limit, intervalS)
  }

  hit(key: string, nowMs: number): Promise<RateLimitResult> | RateLimitResult {
    if (!this.counter.ready) {
      this.lost()
      return this.local.hit(key, nowMs)
    }
    const window = windowOf(nowMs, this.intervalS)
    if (window !== this.window) {
      // A new window: every lease of the last one is void (its shared count expires by itself).
      this.window = window
      this.reset = (window + 1) * this.intervalS
      this.leases = new Map()
    }
    let lease = this.leases.get(key)
    if (lease === undefined) {
      lease = {
        key,
        counterKey: `${this.words.keyPrefix}rl:${window}:${key}`,
        reset: this.reset,
        left: 0,
        lowWater: 0,
        refilling: false,
        bucket: 0,
        current: 0,
        previous: 0,
        waiting: [],
      }
      this.leases.set(key, lease)
    }
    const bucket = Math.floor(nowMs / bucketMs)
    if (bucket !== lease.bucket) {
      lease.previous = bucket === lease.bucket + 1 ? lease.current : 0
      lease.current = 0
      lease.bucket = bucket
    }
    lease.current++
    if (lease.left > 0) {
      lease.left--
      if (lease.left <= lease.lowWater && !lease.refilling) this.refill(lease, window)
      return { allowed: true, limit: this.limit, reset: this.reset }
    }
    if (lease.waiting.length === 0) {
      if (this.due.length === 0) setImmediate(() => this.flush())
      this.due.push(lease)
    }
    const waiting = lease.waiting
    return new Promise((resolve) => {
      waiting.push({ nowMs, resolve })
    })
  }

  /** About half a bucket of the key's recent rate, or nothing for a quiet key. */
  private wanted(lease: Lease) {
    const rate = Math.max(lease.current, lease.previous)
    return rate < leaseMinRate ? 0 : Math.min(leaseMax, Math.ceil(rate / 2))
  }

  private ask(lease: Lease, demand: number, want: number) {
    this.calls++
    this.inFlight++
    return this.counter
      .take(lease.counterKey, this.intervalS + 1, this.limit, demand, want)
      .finally(() => {
        this.inFlight--
      })
  }

  /** Keeps the lease's new part, if the lease is still the current window's. */
  private keep(lease: Lease, window: number, extra: number) {
    if (extra <= 0 || window !== this.window || this.leases.get(lease.key) !== lease) return
    lease.left += extra
    lease.lowWater = Math.floor(extra / 2)
  }

  private refill(lease: Lease, window: number) {
    const want = this.wanted(lease)
    if (want === 0) return
    lease.refilling = true
    this.ask(lease, 0, want).then(
      (granted) => {
        lease.refilling = false
        this.keep(lease, window, granted)
      },
      (err) => {
        lease.refilling = false
        this.errors++
        this.lost(err)
      },
    )
  }

  private flush() {
    const due = this.due
    this.due = []
    const window = this.window
    for (const lease of due) {
      const waiting = lease.waiting
      lease.waiting = []
      // A refill under way brings the lease: this round trip asks for the waiting alone.
      const want = lease.refilling ? 0 : this.wanted(lease)
      this.ask(lease, waiting.length, want).then(
        (granted) => {
          const passed = Math.min(granted, waiting.length)
          waiting.forEach((w, i) => {
            w.resolve({ allowed: i < passed, limit: this.limit, reset: lease.reset })
          })
          this.keep(lease, window, granted - passed)
        },
        (err) => {
          this.errors++
          this.lost(err)
          for (const w of waiting) w.resolve(this.local.hit(lease.key, w.nowMs))
        },
      )
    }
  }

  /** Requests this process may still pass for `key` in the current window without asking. */
  unspent(key: string): number {
    return this.leases.get(key)?.left ?? 0
  }

  /** Resolves once no round trip to the counter is under way. */
  async idle(): Promise<void> {
    while (this.inFlight > 0 || this.due.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  }

  /** Counting in the shared counter (shared by every process), rather than in process. */
  get shared(): boolean {
    return !this.degraded && this.counter.ready
  }

  /** The counter failed or is away: warns once, until `regained`. */
  protected lost(err?: unknown) {
    if (this.degraded) return
    this.degraded = true
    this.log.warn(
      { err: err instanceof Error ? err.message : undefined },
      `${sentence(this.words.peer)} is unreachable: counting rate limits per ${this.words.each} until it returns`,
    )
  }

  /** The counter answers again (a subclass knows when). */
  protected regained() {
    if (this.degraded) {
      this.log.warn(
        `${sentence(this.words.peer)} is reachable again: rate limits are shared once more`,
      )
    }
    this.degraded = false
  }

  async close() {
    await this.counter.close()
  }
}

const sentence = (words: string) => words.charAt(0).toUpperCase() + words.slice(1)
