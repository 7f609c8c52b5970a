import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { MemoryRateLimiter, type RateLimiter, type RateLimitResult, windowOf } from './limiter.js'

// One round trip, atomic: add a batch of requests, and give a new window's key its expiry.
const incrementScript = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
if count == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count`

type Counting = Redis & { tesseraHit(key: string, ttl: number, n: number): Promise<number> }

interface Waiting {
  key: string
  nowMs: number
  /** This request's place in its batch: its count is the batch's base plus this. */
  place: number
  resolve: (result: RateLimitResult) => void
}

/**
 * Counts in Redis, shared by every instance. Requests for the same key that arrive in the same
 * turn of the event loop are added with one INCRBY, and each gets its own exact count back, so
 * a busy account costs one round trip per turn rather than one per request.
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
  private batches = new Map<string, Waiting[]>()

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
    this.redis.defineCommand('tesseraHit', { numberOfKeys: 1, lua: incrementScript })
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
    const redisKey = `${this.keyPrefix}rl:${windowOf(nowMs, this.intervalS)}:${key}`
    let batch = this.batches.get(redisKey)
    if (batch === undefined) {
      batch = []
      if (this.batches.size === 0) setImmediate(() => this.flush())
      this.batches.set(redisKey, batch)
    }
    const waiting = batch
    return new Promise((resolve) => {
      waiting.push({ key, nowMs, place: waiting.length + 1, resolve })
    })
  }

  private flush() {
    const batches = this.batches
    this.batches = new Map()
    for (const [redisKey, waiting] of batches) {
      this.redis.tesseraHit(redisKey, this.intervalS + 1, waiting.length).then(
        (total) => {
          const base = total - waiting.length
          for (const w of waiting) {
            const reset = (windowOf(w.nowMs, this.intervalS) + 1) * this.intervalS
            w.resolve({ allowed: base + w.place <= this.limit, limit: this.limit, reset })
          }
        },
        (err) => {
          this.errors++
          this.degrade(err)
          for (const w of waiting) w.resolve(this.local.hit(w.key, w.nowMs))
        },
      )
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
