import { describe, expect, it } from 'vitest'
import { MemoryRateLimiter } from '../../src/ratelimit/limiter.js'
import { mergeLimits, readNamedLimits, requestsLimit } from '../../src/ratelimit/named.js'

const t0 = 1_700_000_040_000 // the start of a minute, of a second, not of an hour
const perSecond = { limit: 2, duration: 1000 }
const perMinute = { limit: 3, duration: 60_000 }

describe('the in-process limiter', () => {
  it('counts each key in fixed windows of its own duration, aligned to the epoch', () => {
    const l = new MemoryRateLimiter()
    const hits = [0, 10, 999].map((ms) => l.hit('a', t0 + ms, perSecond))
    expect(hits).toEqual([
      { allowed: true, limit: 2, remaining: 1, reset: t0 + 1000 },
      { allowed: true, limit: 2, remaining: 0, reset: t0 + 1000 },
      { allowed: false, limit: 2, remaining: 0, reset: t0 + 1000 },
    ])
    // The next second is a new window; a minute's key is another count.
    expect(l.hit('a', t0 + 1000, perSecond)).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      reset: t0 + 2000,
    })
    expect(l.hit('b', t0 + 1000, perMinute)).toEqual({
      allowed: true,
      limit: 3,
      remaining: 2,
      reset: t0 + 60_000,
    })
  })

  it('counts a cost; a refused one takes nothing; cost 0 passes while anything is left', () => {
    const l = new MemoryRateLimiter()
    expect(l.hit('a', t0, perMinute, 2)).toMatchObject({ allowed: true, remaining: 1 })
    expect(l.hit('a', t0, perMinute, 2)).toMatchObject({ allowed: false, remaining: 1 })
    expect(l.hit('a', t0, perMinute, 0)).toMatchObject({ allowed: true, remaining: 1 })
    expect(l.hit('a', t0, perMinute, 1)).toMatchObject({ allowed: true, remaining: 0 })
    expect(l.hit('a', t0, perMinute, 0)).toMatchObject({ allowed: false, remaining: 0 })
  })

  it('takes back a refund of the same window only, and drops past windows once a second', () => {
    const l = new MemoryRateLimiter()
    l.hit('a', t0, perSecond)
    l.hit('a', t0, perSecond)
    l.refund('a', t0 + 10, perSecond, 1)
    expect(l.hit('a', t0 + 20, perSecond)).toMatchObject({ allowed: true, remaining: 0 })
    l.refund('a', t0 + 1000, perSecond, 1) // the next window: nothing to give back
    expect(l.hit('a', t0 + 1000, perSecond)).toMatchObject({ allowed: true, remaining: 1 })
    expect(l.size).toBe(1)
    l.hit('b', t0 + 5000, perSecond) // a's window has ended: swept
    expect(l.size).toBe(1)
  })
})

describe('named limits', () => {
  it('reads a list, or says what is wrong with it in one sentence', () => {
    expect(readNamedLimits([{ name: 'burst', limit: 5, duration: 1000, cost: 2 }])).toEqual([
      { name: 'burst', limit: 5, duration: 1000, cost: 2 },
    ])
    const bad: [unknown, string][] = [
      [{}, 'limits must be a list'],
      [[1], 'limits[0] must be an object'],
      [[{ name: 'a', limit: 1, duration: 1000, x: 1 }], 'limits[0] has an unknown field x'],
      [
        [{ name: 'A b', limit: 1, duration: 1000 }],
        'limits[0].name must match /^[a-z0-9][a-z0-9._-]{0,63}$/',
      ],
      [
        [
          { name: 'a', limit: 1, duration: 1000 },
          { name: 'a', limit: 2, duration: 1000 },
        ],
        'limits[1].name a is given twice',
      ],
      [
        [{ name: 'a', limit: 0, duration: 1000 }],
        'limits[0].limit must be a whole number from 1 to 1000000000',
      ],
      [
        [{ name: 'a', limit: 1, duration: 999 }],
        'limits[0].duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      [
        [{ name: 'a', limit: 1, duration: 86_400_001 }],
        'limits[0].duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      [
        [{ name: 'a', limit: 1, duration: 1000, cost: -1 }],
        'limits[0].cost must be a whole number from 0 to 1000000000',
      ],
      [
        Array.from({ length: 51 }, (_, i) => ({ name: `l${i}`, limit: 1, duration: 1000 })),
        'limits may hold at most 50 limits',
      ],
    ]
    for (const [input, sentence] of bad) expect(readNamedLimits(input)).toBe(sentence)
  })

  it("merges by name: a later list's limit replaces an earlier one's in its place", () => {
    const plan = [
      { name: 'requests', limit: 100, duration: 60_000 },
      { name: 'daily', limit: 1000, duration: 86_400_000 },
    ]
    const own = [{ name: 'daily', limit: 10, duration: 86_400_000 }]
    expect(mergeLimits([requestsLimit(300)], plan, own)).toEqual([
      { name: 'requests', limit: 100, duration: 60_000 },
      { name: 'daily', limit: 10, duration: 86_400_000 },
    ])
    expect(mergeLimits([requestsLimit(300)], undefined, undefined)).toEqual([
      { name: 'requests', limit: 300, duration: 60_000 },
    ])
  })
})
