import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { MemoryRateLimiter, type RateLimiter, type RateLimitResult, windowOf } from './limiter.js'

// One round trip, atomic: count, and give a new window's key its expiry.
const incrementScript = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count`

type Counting = Redis & { tesseraHit(key: string, ttl: number): Promise<number> }

/**
 * Counts in Redis, shared by every instance. While Redis is unreachable it counts in process
 * (each instance then allows the limit on its own), logs a warning once, and goes back to
 * shared counting as soon as Redis answers again.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Counting
  private readonly local: MemoryRateLimiter
  private degraded = false

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
      // Commands issued in the same tick share one write: fewer syscalls under load.
      enableAutoPipelining: true,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    }) as Counting
    this.redis.defineCommand('tesseraHit', { numberOfKeys: 1, lua: incrementScript })
    this.redis.on('error', (err) => this.degrade(err))
    this.redis.on('ready', () => {
      if (this.degraded) this.log.warn('Redis is reachable again: rate limits are shared once more')
      this.degraded = false
    })
  }

  async hit(key: string, nowMs: number): Promise<RateLimitResult> {
    if (this.redis.status !== 'ready') {
      this.degrade()
      return this.local.hit(key, nowMs)
    }
    const window = windowOf(nowMs, this.intervalS)
    const reset = (window + 1) * this.intervalS
    try {
      const count = await this.redis.tesseraHit(
        `${this.keyPrefix}rl:${window}:${key}`,
        this.intervalS + 1,
      )
      return { allowed: count <= this.limit, limit: this.limit, reset }
    } catch (err) {
      this.degrade(err)
      return this.local.hit(key, nowMs)
    }
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
