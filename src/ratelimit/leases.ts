import type { Logger } from 'pino'
import { bucketMs, type LeaseCounter, leaseMax, leaseMinRate } from './grant.js'
import {
  type LimitRule,
  MemoryRateLimiter,
  type RateLimiter,
  type RateLimitResult,
  windowOf,
} from './limiter.js'

export {
  type Grant,
  grantOf,
  type LeaseCounter,
  leaseMax,
  leaseReserve,
  leaseShare,
} from './grant.js'

/** How a limiter names its keys and, in its log lines, its counter and its own kind. */
export interface LeasingWords {
  /** Put before `rl:<duration>:<window>:<key>`. */
  keyPrefix: string
  /** The counter, as a log line names it: "Redis", "the primary". */
  peer: string
  /** What counts on its own while the counter is away: "instance", "worker". */
  each: string
}

/** What one process knows of one key in one window. */
interface Lease {
  key: string
  counterKey: string
  window: number
  duration: number
  /** The limit last asked with (a changed limit applies from the next take). */
  limit: number
  /** Epoch ms at which the lease's window ends. */
  reset: number
  /** Requests granted by the counter to this process and not spent yet. */
  left: number
  /** What the shared count had left (beyond every grant) at its last answer. */
  known: number
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
  cost: number
  rule: LimitRule
  resolve: (result: RateLimitResult) => void
}

/**
 * Counts in a shared counter (Redis for instances, the primary for workers), without a round
 * trip on a busy key's hot path: a process takes a lease (a block of the window's remaining
 * count) in one atomic step and spends it locally. A lease is about 50 ms of the key's recent
 * rate in this process, at most a quarter of what is left above the last `leaseReserve`
 * requests, which are granted one by one; a refill is asked for in the background when half of
 * it is spent. A quiet key gets no lease: its requests of one turn share one round trip, as
 * each gets its own count.
 *
 * Exact where the contract needs it: the counter never grants more than the limit, so no more
 * than the limit pass in a window across the fleet. A request may be refused while fewer than
 * the limit have passed only while other processes hold unspent leases: by at most their sum,
 * never at limits up to `leaseReserve + leaseShare`. Leases end with their window. What a
 * request refused by another limit gives back (`refund`) stays in this process's lease.
 *
 * While the counter is unreachable it counts in process (each process then allows the limit on
 * its own), logs a warning once, and goes back to shared counting once the counter answers again.
 */
export class LeasingRateLimiter implements RateLimiter {
  private readonly local = new MemoryRateLimiter()
  private degraded = false
  /** Connection errors and failed takes, for /metrics. */
  errors = 0
  /** Round trips to the counter, for /metrics. */
  calls = 0
  private leases = new Map<string, Lease>()
  private due: Lease[] = []
  private inFlight = 0
  private sweepAt = 0

  constructor(
    private readonly counter: LeaseCounter,
    private readonly log: Logger,
    private readonly words: LeasingWords,
  ) {}

  hit(
    key: string,
    nowMs: number,
    rule: LimitRule,
    cost = 1,
  ): Promise<RateLimitResult> | RateLimitResult {
    if (!this.counter.ready) {
      this.lost()
      return this.local.hit(key, nowMs, rule, cost)
    }
    const lease = this.leaseOf(key, nowMs, rule)
    const bucket = Math.floor(nowMs / bucketMs)
    if (bucket !== lease.bucket) {
      lease.previous = bucket === lease.bucket + 1 ? lease.current : 0
      lease.current = 0
      lease.bucket = bucket
    }
    lease.current += cost
    if (cost === 0) {
      // Counts nothing: passes while anything is left, as far as this process knows.
      const remaining = lease.known + lease.left
      return { allowed: remaining > 0, limit: lease.limit, remaining, reset: lease.reset }
    }
    if (lease.left >= cost) {
      lease.left -= cost
      if (lease.left <= lease.lowWater && !lease.refilling) this.refill(lease)
      return {
        allowed: true,
        limit: lease.limit,
        remaining: lease.known + lease.left,
        reset: lease.reset,
      }
    }
    if (lease.waiting.length === 0) {
      if (this.due.length === 0) setImmediate(() => this.flush())
      this.due.push(lease)
    }
    const waiting = lease.waiting
    return new Promise((resolve) => {
      waiting.push({ nowMs, cost, rule, resolve })
    })
  }

  refund(key: string, nowMs: number, rule: LimitRule, cost: number): void {
    const lease = this.leases.get(key)
    if (lease !== undefined && lease.window === windowOf(nowMs, rule.duration)) lease.left += cost
    else this.local.refund(key, nowMs, rule, cost)
  }

  /** The key's lease of the current window, made when there is none. */
  private leaseOf(key: string, nowMs: number, rule: LimitRule): Lease {
    const { duration } = rule
    const window = windowOf(nowMs, duration)
    let lease = this.leases.get(key)
    if (lease !== undefined && lease.window === window && lease.duration === duration) {
      lease.limit = rule.limit
      return lease
    }
    if (nowMs >= this.sweepAt) this.sweep(nowMs)
    // A new window: the last one's lease is void (its shared count expires by itself).
    lease = {
      key,
      counterKey: `${this.words.keyPrefix}rl:${duration}:${window}:${key}`,
      window,
      duration,
      limit: rule.limit,
      reset: (window + 1) * duration,
      left: 0,
      known: rule.limit,
      lowWater: 0,
      refilling: false,
      bucket: 0,
      current: 0,
      previous: 0,
      waiting: [],
    }
    this.leases.set(key, lease)
    return lease
  }

  /** Drops the leases of windows that have ended (their waiting hold their own reference). */
  private sweep(nowMs: number) {
    this.sweepAt = nowMs + 1000
    for (const [key, lease] of this.leases) if (lease.reset <= nowMs) this.leases.delete(key)
  }

  /** About half a bucket of the key's recent rate, or nothing for a quiet key. */
  private wanted(lease: Lease) {
    const rate = Math.max(lease.current, lease.previous)
    return rate < leaseMinRate ? 0 : Math.min(leaseMax, Math.ceil(rate / 2))
  }

  private ask(lease: Lease, demand: number, want: number) {
    this.calls++
    this.inFlight++
    const ttl = Math.ceil(lease.duration / 1000) + 1
    return this.counter.take(lease.counterKey, ttl, lease.limit, demand, want).finally(() => {
      this.inFlight--
    })
  }

  /** Keeps the lease's new part, if the lease is still the key's. */
  private keep(lease: Lease, extra: number, used: number) {
    if (this.leases.get(lease.key) !== lease) return
    lease.known = Math.max(0, lease.limit - used)
    if (extra <= 0) return
    lease.left += extra
    lease.lowWater = Math.floor(extra / 2)
  }

  private refill(lease: Lease) {
    const want = this.wanted(lease)
    if (want === 0) return
    lease.refilling = true
    this.ask(lease, 0, want).then(
      ({ grant, used }) => {
        lease.refilling = false
        this.keep(lease, grant, used)
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
    for (const lease of due) {
      const waiting = lease.waiting
      lease.waiting = []
      // A refill under way brings the lease: this round trip asks for the waiting alone.
      const want = lease.refilling ? 0 : this.wanted(lease)
      let demand = 0
      for (const w of waiting) demand += w.cost
      this.ask(lease, demand, want).then(
        ({ grant, used }) => {
          // In order, each that the grant still covers; what is left over is the lease's.
          let left = grant
          const known = Math.max(0, lease.limit - used)
          for (const w of waiting) {
            const allowed = w.cost <= left
            if (allowed) left -= w.cost
            w.resolve({ allowed, limit: lease.limit, remaining: known + left, reset: lease.reset })
          }
          this.keep(lease, left, used)
        },
        (err) => {
          this.errors++
          this.lost(err)
          for (const w of waiting) w.resolve(this.local.hit(lease.key, w.nowMs, w.rule, w.cost))
        },
      )
    }
  }

  /** Requests this process may still pass for `key` in its current window without asking. */
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
