import type { RateLimiter } from '../ratelimit/limiter.js'

/**
 * Workload identity exchanges (docs/machines.md) are limited, RATE_LIMIT_PER_MINUTE a minute,
 * in counts of their own: per client address (`ip:<address>`) before anything is read, and per
 * account (`account:<username>`) once the identity is proven. An exchange is no verification of
 * a token, and the refusals it audits must not be a way to flood an account's audit log.
 * Undefined when admitted, else the seconds to wait.
 */
export async function exchangeWait(
  limiter: RateLimiter,
  who: string,
  now: number,
  perMinute: number,
): Promise<number | undefined> {
  const result = await limiter.hit(`exchange:${who}`, now, {
    limit: perMinute,
    duration: 60_000,
  })
  return result.allowed ? undefined : Math.max(1, Math.ceil((result.reset - now) / 1000))
}
