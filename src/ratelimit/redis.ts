import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { MemoryRateLimiter, type RateLimiter, type RateLimitResult, windowOf } from './limiter.js'

/**
 * Leases are never taken from the last `reserve` requests of a window: those are counted in Redis
 * one by one, so at limits up to `reserve + share` no instance ever holds an unspent allowance.
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
 * One round trip, atomic: grants up to `demand` requests of what the window has left, plus a
 * lease of at most `want` more, sized from what is left above the reserve. Returns the grant.
 * KEYS[1] the window's count; ARGV: ttl, limit, demand, want, reserve, share.
 */
const leaseScript = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local left = tonumber(ARGV[2]) - used
if left <= 0 then return 0 end
local grant = math.min(tonumber(ARGV[3]), left)
local extra = math.floor((left - grant - tonumber(ARGV[5])) / tonumber(ARGV[6]))
if extra > tonumber(ARGV[4]) then extra = tonumber(ARGV[4]) end
if extra > 0 then grant = grant + extra end
if grant <= 0 then return 0 end
if used == 0 then redis.call('SET', KEYS[1], grant, 'EX', ARGV[1])
else redis.call('INCRBY', KEYS[1], grant) end
return grant`

type Counting = Redis & {
  tesseraLease(
    key: string,
    ttl: number,
    limit: number,
    demand: number,
    want: number,
    reserve: number,
    share: number,
  ): Promise<number>
}

/** What one instance knows of one key in the current window. */
interface Lease {
  key: string
  redisKey: string
  /** Epoch seconds at which the lease's window ends. */
  reset: number
  /** Requests granted by Redis to this instance and not spent yet. */
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
 * Counts in Redis, shared by every instance, without a round trip on a busy account's hot path:
 * an instance takes a lease (a block of the window's remaining count) in one atomic step and
 * spends it locally. A lease is about 50 ms of the account's recent rate on this instance, at
 * most a quarter of what is left above the last `leaseReserve` requests, which are granted one
 * by one; a refill is asked for in the background when half of it is spent. A quiet account
 * gets no lease: its requests of one turn share one round trip, as each gets its own count.
 *
 * Exact where the contract needs it: Redis never grants more than the limit, so no more than
 * the limit pass in a window across the fleet. A request may be refused while fewer than the
 * limit have passed only while other instances hold unspent leases: by at most their sum, never
 * at limits up to `leaseReserve + leaseShare`. Leases end with their window.
 *
 * While Redis is unreachable it counts in process (each instance then allows the limit on its
 * own), logs a warning once, and goes back to shared counting as soon as Redis answers again.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Counting
  private readonly local: MemoryRateLimiter
  private degraded = false
  /** Connection errors and failed commands, for /metrics. */
  errors = 0
  /** Round trips to Redis, for /metrics. */
  calls = 0
  private window = -1
  private reset = 0
  private leases = new Map<string, Lease>()
  private due: Lease[] = []
  private inFlight = 0

  constructor(
    url: string,
    private readonly keyPrefix: string,
    readonly limit: number,
    private readonly log: Logger,
    readonly intervalS = 60,
  ) {
    this.local = new MemoryRateLimiter(limit, intervalS)
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    }) as Counting
    this.redis.defineCommand('tesseraLease', { numberOfKeys: 1, lua: leaseScript })
    this.redis.on('error', (err) => {
      this.errors++
      this.degrade(err)
    })
    this.redis.on('ready', () => {
      if (this.degraded) this.log.warn('Redis is reachable again: rate limits are shared once more')
      this.degraded = false
    })
  }

  hit(key: string, nowMs: number): Promise<RateLimitResult> | RateLimitResult {
    if (this.redis.status !== 'ready') {
      this.degrade()
      return this.local.hit(key, nowMs)
    }
    const window = windowOf(nowMs, this.intervalS)
    if (window !== this.window) {
      // A new window: every lease of the last one is void (its Redis count expires by itself).
      this.window = window
      this.reset = (window + 1) * this.intervalS
      this.leases = new Map()
    }
    let lease = this.leases.get(key)
    if (lease === undefined) {
      lease = {
        key,
        redisKey: `${this.keyPrefix}rl:${window}:${key}`,
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
    return this.redis
      .tesseraLease(
        lease.redisKey,
        this.intervalS + 1,
        this.limit,
        demand,
        want,
        leaseReserve,
        leaseShare,
      )
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
        this.degrade(err)
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
          this.degrade(err)
          for (const w of waiting) w.resolve(this.local.hit(lease.key, w.nowMs))
        },
      )
    }
  }

  /** Requests this instance may still pass for `key` in the current window without asking. */
  unspent(key: string): number {
    return this.leases.get(key)?.left ?? 0
  }

  /** Resolves once no round trip to Redis is under way. */
  async idle(): Promise<void> {
    while (this.inFlight > 0 || this.due.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  }

  /** Counting in Redis (shared by every instance), rather than in process. */
  get shared(): boolean {
    return !this.degraded && this.redis.status === 'ready'
  }

  private degrade(err?: unknown) {
    if (this.degraded) return
    this.degraded = true
    this.log.warn(
      { err: err instanceof Error ? err.message : undefined },
      'Redis is unreachable: counting rate limits per instance until it returns',
    )
  }

  async close() {
    this.redis.disconnect()
  }
}
