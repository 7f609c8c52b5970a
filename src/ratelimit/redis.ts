import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { type LeaseCounter, LeasingRateLimiter, leaseReserve, leaseShare } from './leases.js'

export { leaseMax, leaseReserve, leaseShare } from './leases.js'

/**
 * One round trip, atomic: grants up to `demand` requests of what the window has left, plus a
 * lease of at most `want` more, sized from what is left above the reserve. Returns the grant and
 * the count after it.
 * The arithmetic is `grantOf` (src/ratelimit/leases.ts): the two must stay alike.
 * KEYS[1] the window's count; ARGV: ttl, limit, demand, want, reserve, share.
 */
const leaseScript = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local left = tonumber(ARGV[2]) - used
if left <= 0 then return {0, used} end
local grant = math.min(tonumber(ARGV[3]), left)
local extra = math.floor((left - grant - tonumber(ARGV[5])) / tonumber(ARGV[6]))
if extra > tonumber(ARGV[4]) then extra = tonumber(ARGV[4]) end
if extra > 0 then grant = grant + extra end
if grant <= 0 then return {0, used} end
if used == 0 then redis.call('SET', KEYS[1], grant, 'EX', ARGV[1])
else redis.call('INCRBY', KEYS[1], grant) end
return {grant, used + grant}`

type Counting = Redis & {
  tesseraLease(
    key: string,
    ttl: number,
    limit: number,
    demand: number,
    want: number,
    reserve: number,
    share: number,
  ): Promise<[number, number]>
}

/** The window's counts in Redis, each key expiring by itself shortly after its window. */
class RedisLeaseCounter implements LeaseCounter {
  readonly redis: Counting

  constructor(url: string) {
    // No offline queue and no retries: a command Redis cannot answer now fails at once, and the
    // limiter counts in process meanwhile rather than holding requests.
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    }) as Counting
    this.redis.defineCommand('tesseraLease', { numberOfKeys: 1, lua: leaseScript })
  }

  get ready() {
    return this.redis.status === 'ready'
  }

  async take(key: string, ttlS: number, limit: number, demand: number, want: number) {
    const [grant, used] = await this.redis.tesseraLease(
      key,
      ttlS,
      limit,
      demand,
      want,
      leaseReserve,
      leaseShare,
    )
    return { grant, used }
  }

  async close() {
    this.redis.disconnect()
  }
}

/**
 * Counts in Redis, shared by every instance: a LeasingRateLimiter (src/ratelimit/leases.ts, where
 * the leases and their exactness are explained) over Redis. While Redis is unreachable it counts
 * in process, and shares again as soon as Redis is ready once more.
 */
export class RedisRateLimiter extends LeasingRateLimiter {
  constructor(url: string, keyPrefix: string, log: Logger) {
    const counter = new RedisLeaseCounter(url)
    super(counter, log, { keyPrefix, peer: 'Redis', each: 'instance' })
    counter.redis.on('error', (err) => {
      this.errors++
      this.lost(err)
    })
    counter.redis.on('ready', () => this.regained())
  }
}
