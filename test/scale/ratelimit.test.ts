import fc from 'fast-check'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { windowOf } from '../../src/ratelimit/limiter.js'
import { RedisRateLimiter } from '../../src/ratelimit/redis.js'
import { fleetEnv } from './env.js'
import { tcpProxy } from './tcp-proxy.js'

const fleet = fleetEnv()
const log = pino({ level: 'silent' })
const limiters: RedisRateLimiter[] = []
/** A Redis limiter whose hits all apply one limit per minute, as the checkpoint gives it. */
function withLimit(l: RedisRateLimiter, limit: number) {
  limiters.push(l)
  const rule = { limit, duration: 60_000 }
  return Object.assign(l, {
    hit: (key: string, nowMs: number) => RedisRateLimiter.prototype.hit.call(l, key, nowMs, rule),
  })
}
const limiter = (limit = 5) =>
  withLimit(new RedisRateLimiter(fleet.redisUrl, fleet.prefix, log), limit)
/** The count's key in Redis of `key` in the minute of `now`. */
const minuteKey = (key: string, now: number) =>
  `${fleet.prefix}rl:60000:${windowOf(now, 60_000)}:${key}`
type Limited = ReturnType<typeof limiter>
const ready = async (l: Limited) => {
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
    await Promise.all([ready(a), ready(b)])
    const now = Date.now()
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).hit('account-b', now)),
    )
    expect(results.filter((r) => r.allowed)).toHaveLength(5)
  })

  it('takes a lease for a busy key: its later requests are answered without a round trip', async () => {
    const l = limiter(1000)
    await ready(l)
    const now = Date.now()
    // 20 requests in one turn: one round trip grants them and a lease of half their rate.
    const first = await Promise.all(Array.from({ length: 20 }, () => l.hit('busy', now)))
    expect(first.every((r) => r.allowed)).toBe(true)
    expect(l.unspent('busy')).toBe(10)
    const calls = l.calls
    const next = Array.from({ length: 5 }, () => l.hit('busy', now))
    expect(next.every((r) => !(r instanceof Promise) && r.allowed)).toBe(true)
    expect(l.unspent('busy')).toBe(5)
    expect(l.calls).toBe(calls + 1) // at half the lease, one refill in the background
    await l.idle()
    // The refill is half the rate seen in the bucket (25 requests): 13 more.
    expect(l.unspent('busy')).toBe(18)
    const redis = new Redis(fleet.redisUrl)
    const counted = await redis.get(minuteKey('busy', now))
    redis.disconnect()
    expect(Number(counted)).toBe(25 + 18) // what passed and what this instance holds
  })

  it('a quiet key gets no lease: each turn is one exact count', async () => {
    const l = limiter(1000)
    await ready(l)
    const now = Date.now()
    for (let i = 0; i < 3; i++) {
      const r = await Promise.all(Array.from({ length: 2 }, () => l.hit('quiet', now - i * 200)))
      expect(r.map((x) => x.allowed)).toEqual([true, true])
      expect(l.unspent('quiet')).toBe(0)
    }
  })

  let runs = 0
  /**
   * The most one instance can hold unspent for a limit, as docs/scaling.md states it: a lease
   * is at most a quarter of what is left above the last 10 requests and at most 4,096, and a
   * refill comes when half of the last is spent.
   */
  const holdBound = (limit: number) => {
    const extra = Math.max(0, Math.min(4096, Math.floor((limit - 11) / 4)))
    return extra + Math.floor(extra / 2)
  }

  const interleavings = async (limits: fc.Arbitrary<number>, burst: number, numRuns: number) => {
    const redis = new Redis(fleet.redisUrl)
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 2, max: 4 }),
          limits,
          fc.array(
            fc.record({
              instance: fc.nat(3),
              requests: fc.integer({ min: 1, max: burst }),
              settle: fc.boolean(),
            }),
            { minLength: 1, maxLength: 40 },
          ),
          async (count, limit, steps) => {
            const key = `interleaved-${runs++}`
            const instances = Array.from({ length: count }, () => limiter(limit))
            await Promise.all(instances.map(ready))
            const now = Date.now()
            const redisKey = minuteKey(key, now)
            let passed = 0
            try {
              for (const step of steps) {
                const l = instances[step.instance % count] as Limited
                const before = passed
                const results = await Promise.all(
                  Array.from({ length: step.requests }, () => l.hit(key, now)),
                )
                const allowed = results.filter((r) => r.allowed).length
                passed += allowed
                // Never more than the limit across the instances.
                expect(passed).toBeLessThanOrEqual(limit)
                for (const i of instances)
                  expect(i.unspent(key)).toBeLessThanOrEqual(holdBound(limit))
                if (allowed < step.requests) {
                  // Refused early only by what the other instances may hold.
                  const short = limit - (before + allowed)
                  expect(short).toBeLessThanOrEqual((count - 1) * holdBound(limit))
                  if (limit <= 14) expect(short).toBe(0)
                }
                if (step.settle) {
                  await Promise.all(instances.map((i) => i.idle()))
                  const held = instances.reduce((n, i) => n + i.unspent(key), 0)
                  // Redis granted exactly what passed and what the instances still hold.
                  expect(Number((await redis.get(redisKey)) ?? 0)).toBe(passed + held)
                }
              }
            } finally {
              await Promise.all(instances.map((i) => i.idle()))
              for (const i of instances) await i.close()
              limiters.splice(limiters.length - count, count)
            }
          },
        ),
        { numRuns },
      )
    } finally {
      redis.disconnect()
    }
  }

  it('property: 2-4 instances, limits 1-20, any interleaving: never over the limit, never early up to 14', async () => {
    await interleavings(fc.integer({ min: 1, max: 20 }), 6, 60)
  }, 60_000)

  it('property: 2-4 instances, limits 20-400, bursts up to 60: refused early only by the leases others hold', async () => {
    await interleavings(fc.integer({ min: 20, max: 400 }), 60, 40)
  }, 60_000)

  it('with Redis cut mid-window, counts in process; when it returns, spends its lease and shares again', async () => {
    const proxy = await tcpProxy(Number(new URL(fleet.redisUrl).port || 6379))
    const l = withLimit(
      new RedisRateLimiter(`redis://127.0.0.1:${proxy.port}`, fleet.prefix, log),
      1000,
    )
    const redis = new Redis(fleet.redisUrl)
    try {
      await ready(l)
      const now = Date.now()
      const key = 'cut-mid-window'
      const counted = async () => Number(await redis.get(minuteKey(key, now)))
      await Promise.all(Array.from({ length: 20 }, () => l.hit(key, now)))
      expect(l.unspent(key)).toBe(10)
      expect(await counted()).toBe(30)

      await proxy.cut()
      for (let i = 0; i < 100 && l.shared; i++) await new Promise((r) => setTimeout(r, 20))
      expect(l.shared).toBe(false)
      // Away: each request is counted in process (the limit per instance), synchronously.
      const away = Array.from({ length: 5 }, () => l.hit(key, now))
      expect(away.every((r) => !(r instanceof Promise) && r.allowed)).toBe(true)
      expect(l.unspent(key)).toBe(10)

      await proxy.restore()
      for (let i = 0; i < 200 && !l.shared; i++) await new Promise((r) => setTimeout(r, 20))
      expect(l.shared).toBe(true)
      // Back: the lease Redis granted in this window is spent first, without a round trip.
      const back = l.hit(key, now)
      expect(back).toMatchObject({
        allowed: true,
        limit: 1000,
        reset: (windowOf(now, 60_000) + 1) * 60_000,
      })
      expect(l.unspent(key)).toBe(9)
      await l.idle()
      expect(await counted()).toBe(30 + (l.unspent(key) - 9))
    } finally {
      redis.disconnect()
      await proxy.close()
    }
  })
})
