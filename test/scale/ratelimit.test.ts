import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { RedisRateLimiter } from '../../src/ratelimit/redis.js'
import { fleetEnv } from './env.js'

const fleet = fleetEnv()
const log = pino({ level: 'silent' })
const limiters: RedisRateLimiter[] = []
const limiter = () => {
  const l = new RedisRateLimiter(fleet.redisUrl, fleet.prefix, 5, log)
  limiters.push(l)
  return l
}
const ready = async (l: RedisRateLimiter) => {
  for (let i = 0; i < 100 && l.hit('warm-up', Date.now()) instanceof Promise === false; i++) {
    await new Promise((r) => setTimeout(r, 20))
  }
}
afterAll(async () => {
  for (const l of limiters) await l.close()
  await fleet.drop()
})

describe('Redis rate limiting', () => {
  it('gives each of many requests in one turn its own count: exactly the limit pass', async () => {
    const l = limiter()
    await ready(l)
    const now = Date.now()
    const results = await Promise.all(Array.from({ length: 8 }, () => l.hit('account-a', now)))
    expect(results.filter((r) => r.allowed)).toHaveLength(5)
    expect(new Set(results.map((r) => r.reset)).size).toBe(1)
  })

  it('counts two instances hitting at once as one', async () => {
    const [a, b] = [limiter(), limiter()]
    await Promise.all([ready(a as RedisRateLimiter), ready(b as RedisRateLimiter)])
    const now = Date.now()
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        ((i % 2 ? a : b) as RedisRateLimiter).hit('account-b', now),
      ),
    )
    expect(results.filter((r) => r.allowed)).toHaveLength(5)
  })
})
