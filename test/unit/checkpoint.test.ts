import { describe, expect, it } from 'vitest'
import type { AccountRecord } from '../../src/db/repositories.js'
import { MemoryRateLimiter } from '../../src/ratelimit/limiter.js'
import { requestsLimit } from '../../src/ratelimit/named.js'
import { ScopeCatalog } from '../../src/scopes/catalog.js'
import type { Principal } from '../../src/tokens/principal.js'
import type { Validation } from '../../src/tokens/validator.js'
import type { Meter } from '../../src/usage/meter.js'
import { outcomeIndex } from '../../src/usage/outcomes.js'
import { Checkpoint, statesOf, type Valid } from '../../src/verification/checkpoint.js'
import { LimitBook } from '../../src/verification/limits.js'

const t0 = 1_700_000_040_000
const catalog = new ScopeCatalog({
  scopes: [{ id: 'styles:read', description: 'Read styles' }],
  plans: {
    free: { scopes: ['styles:read'] },
    pro: {
      scopes: ['styles:read'],
      ratelimits: [
        { name: 'requests', limit: 4, duration: 60_000 },
        { name: 'hourly', limit: 100, duration: 3_600_000 },
      ],
    },
  },
})

function setup(account: AccountRecord, principal: Principal) {
  const counted: (number | undefined)[] = []
  /** The names of the limits that refused, as the Usage split counts them. */
  const limitedBy: string[] = []
  const usage = {
    countValidation: (_v: Validation, outcome?: number) => counted.push(outcome),
    countLimited: (_v: Validation, name: string) => {
      counted.push(outcomeIndex.rate_limited)
      limitedBy.push(name)
    },
  } as unknown as Meter
  const limiter = new MemoryRateLimiter()
  const clock = { now: t0 }
  const book = new LimitBook(catalog, requestsLimit(10))
  const checkpoint = new Checkpoint({ limiter, usage, book, now: () => clock.now })
  const valid = { code: 'TokenValid', principal, account } as unknown as Valid
  return { checkpoint, counted, limitedBy, valid, clock }
}

const account = (plan: string, ratelimits?: AccountRecord['ratelimits']): AccountRecord => ({
  username: 'acme',
  plan,
  features: [],
  created: '2026-01-01T00:00:00.000Z',
  disabled: false,
  ...(ratelimits === undefined ? {} : { ratelimits }),
})
const principal = (limits?: Principal['limits']): Principal => ({
  usage: 'pk',
  username: 'acme',
  scopes: new Set(),
  tokenId: 'tok1',
  ...(limits === undefined ? {} : { limits }),
})

describe('the checkpoint', () => {
  it('applies the service `requests` alone at once: one count, no promise, counted valid', () => {
    const { checkpoint, counted, valid } = setup(account('free'), principal())
    const verdict = checkpoint.admit(valid)
    expect(verdict instanceof Promise).toBe(false)
    expect(verdict).toMatchObject({
      allowed: true,
      applied: { key: 'user:acme', on: 'account', rule: { name: 'requests', limit: 10 } },
      result: { remaining: 9, reset: t0 + 60_000 },
    })
    expect(counted).toEqual([undefined])
  })

  it("applies the plan's, the account's own and the token's; one refused consumes none", () => {
    const own = [{ name: 'hourly', limit: 2, duration: 3_600_000 }]
    const burst = [{ name: 'burst', limit: 1, duration: 1000 }]
    const { checkpoint, counted, limitedBy, valid, clock } = setup(
      account('pro', own),
      principal(burst),
    )
    const first = checkpoint.admit(valid) as ReturnType<typeof checkpoint.limits> & object
    expect(statesOf(first as never).map((s) => [s.applied.key, s.result.remaining])).toEqual([
      ['user:acme', 3],
      ['user:acme:hourly', 1],
      ['token:tok1:burst', 0],
    ])
    expect(first).toMatchObject({ allowed: true, applied: { rule: { name: 'burst' } } })
    // The same second: the token's burst refuses, and the account's counts are given back.
    const second = checkpoint.admit(valid)
    expect(second).toMatchObject({ allowed: false, applied: { rule: { name: 'burst' } } })
    expect(statesOf(second as never).map((s) => s.result.remaining)).toEqual([3, 1, 0])
    expect(counted).toEqual([undefined, outcomeIndex.rate_limited])
    clock.now += 1000
    expect(checkpoint.admit(valid)).toMatchObject({ allowed: true, result: { remaining: 0 } })
    clock.now += 1000
    // The account's own hourly (2) refuses now: it replaced the plan's 100.
    expect(checkpoint.admit(valid)).toMatchObject({
      allowed: false,
      applied: { rule: { name: 'hourly', limit: 2 } },
      requests: { remaining: 2 },
    })
    // Each refusal counted once, rate_limited, by the name of the limit that refused it.
    expect(limitedBy).toEqual(['burst', 'hourly'])
  })

  it('gives back what a passed verdict took (refused after its limits: credits)', () => {
    const { checkpoint, valid } = setup(account('free'), principal())
    const verdict = checkpoint.limits(valid) as never
    checkpoint.release(verdict)
    expect(checkpoint.limits(valid)).toMatchObject({ result: { remaining: 9 } })
  })
})
