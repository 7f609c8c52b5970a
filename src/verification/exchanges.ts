import type { RateLimiter } from '../ratelimit/limiter.js'

/**
 * Workload identity exchanges (docs/machines.md) are limited per account, RATE_LIMIT_PER_MINUTE
 * a minute, in a count of their own: an exchange is no verification of a token, and the refusals
 * it audits must not be a way to flood the account's audit log. Undefined when admitted, else
 * the seconds to wait.
 */
export async function exchangeWait(
  limiter: RateLimiter,
  username: string,
  now: number,
  perMinute: number,
): Promise<number | undefined> {
  const result = await limiter.hit(`exchange:${username}`, now, {
    limit: perMinute,
    duration: 60_000,
  })
  return result.allowed ? undefined : Math.max(1, Math.ceil((result.reset - now) / 1000))
}
