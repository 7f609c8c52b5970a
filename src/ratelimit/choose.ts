import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { IpcChannel } from './attempts.js'
import { WorkerRateLimiter } from './cluster.js'
import { MemoryRateLimiter, type RateLimiter } from './limiter.js'
import { RedisRateLimiter } from './redis.js'

/**
 * The process's rate limiter: shared in Redis across instances (REDIS_URL), through the primary
 * across a machine's workers, or in process.
 */
export function limiterOf(config: Config, log: Logger, primary?: IpcChannel): RateLimiter {
  if (config.redis) return new RedisRateLimiter(config.redis.url, config.redis.keyPrefix, log)
  return primary ? new WorkerRateLimiter(primary, log) : new MemoryRateLimiter()
}
