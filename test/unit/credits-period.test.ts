import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { ScopeCatalog } from '../../src/scopes/catalog.js'
import {
  isLeaseId,
  lastRefill,
  leaseId,
  nextRefill,
  type Refill,
} from '../../src/usage/credits-period.js'

/** Refill moments (00:00 UTC, daily or on a day of the month), lease ids, plans' credits. */

const at = (iso: string) => Date.parse(iso)
const iso = (ms: number) => new Date(ms).toISOString()

describe('refill moments', () => {
  const daily: Refill = { interval: 'daily', amount: 1 }
  const on15: Refill = { interval: 'monthly', amount: 1, day: 15 }
  const on28: Refill = { interval: 'monthly', amount: 1, day: 28 }

  it('refills daily at the next 00:00 UTC, strictly after', () => {
    expect(iso(nextRefill(daily, at('2026-11-22T12:00:00.000Z')))).toBe('2026-11-23T00:00:00.000Z')
    expect(iso(nextRefill(daily, at('2026-11-23T00:00:00.000Z')))).toBe('2026-11-24T00:00:00.000Z')
    expect(iso(nextRefill(daily, at('2026-12-31T23:59:59.999Z')))).toBe('2027-01-01T00:00:00.000Z')
    expect(iso(lastRefill(daily, at('2026-11-23T00:00:00.000Z')))).toBe('2026-11-23T00:00:00.000Z')
    expect(iso(lastRefill(daily, at('2026-11-22T23:59:59.999Z')))).toBe('2026-11-22T00:00:00.000Z')
  })

  it('refills monthly on its day, across the year and February', () => {
    expect(iso(nextRefill(on15, at('2026-11-14T23:59:59.999Z')))).toBe('2026-11-15T00:00:00.000Z')
    expect(iso(nextRefill(on15, at('2026-11-15T00:00:00.000Z')))).toBe('2026-12-15T00:00:00.000Z')
    expect(iso(nextRefill(on15, at('2026-12-20T00:00:00.000Z')))).toBe('2027-01-15T00:00:00.000Z')
    expect(iso(nextRefill(on28, at('2027-02-01T00:00:00.000Z')))).toBe('2027-02-28T00:00:00.000Z')
    expect(iso(lastRefill(on15, at('2026-11-14T00:00:00.000Z')))).toBe('2026-10-15T00:00:00.000Z')
    expect(iso(lastRefill(on15, at('2027-01-03T00:00:00.000Z')))).toBe('2026-12-15T00:00:00.000Z')
    expect(iso(lastRefill(on15, at('2026-11-15T00:00:00.000Z')))).toBe('2026-11-15T00:00:00.000Z')
    const first: Refill = { interval: 'monthly', amount: 1 }
    expect(iso(nextRefill(first, at('2026-11-22T12:00:00.000Z')))).toBe('2026-12-01T00:00:00.000Z')
  })
})

describe('lease ids', () => {
  it('are 128 random bits in base64url, each new', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => leaseId()))
    expect(ids.size).toBe(1000)
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/)
      expect(Buffer.from(id, 'base64url').length).toBe(16)
      expect(isLeaseId(id)).toBe(true)
    }
  })

  it('are not looked up for anything else', () => {
    for (const text of [
      '',
      'x',
      '-.-.1.abcdefgh',
      'A'.repeat(21),
      'A'.repeat(23),
      `${'A'.repeat(21)}=`,
    ]) {
      expect(isLeaseId(text)).toBe(false)
    }
  })
})

describe("plans' credits in the catalog", () => {
  const catalog = (credits: unknown) =>
    new ScopeCatalog({
      scopes: [{ id: 'a', description: 'A' }],
      plans: { free: { scopes: ['a'] }, paid: { scopes: ['a'], credits } },
    })

  it('reads amount, refill and day; monthly defaults to the 1st', () => {
    expect(catalog({ amount: 5 }).planCredits('paid')).toEqual({ amount: 5 })
    expect(catalog({ amount: 5, refill: 'monthly' }).planCredits('paid')).toEqual({
      amount: 5,
      refill: 'monthly',
      day: 1,
    })
    const daily = catalog({ amount: 0, refill: 'daily' })
    expect(daily.planCredits('paid')).toEqual({ amount: 0, refill: 'daily' })
    expect(daily.planCredits('free')).toBeUndefined()
    expect(daily.plansCarryCredits).toBe(true)
    expect(catalog(undefined).plansCarryCredits).toBe(false)
  })

  it('refuses credits it cannot read, saying where', () => {
    const bad: [unknown, string][] = [
      [5, 'plans.paid.credits must be { amount, refill?, day? }'],
      [{ amount: -1 }, 'plans.paid.credits.amount must be a whole number of 0 or more'],
      [{ amount: 1.5 }, 'plans.paid.credits.amount must be a whole number of 0 or more'],
      [{ amount: 1, refill: 'weekly' }, 'plans.paid.credits.refill must be daily or monthly'],
      [
        { amount: 1, refill: 'monthly', day: 29 },
        'plans.paid.credits.day must be 1 to 28, with a monthly refill',
      ],
      [
        { amount: 1, refill: 'daily', day: 2 },
        'plans.paid.credits.day must be 1 to 28, with a monthly refill',
      ],
    ]
    for (const [credits, why] of bad) {
      expect(() => catalog(credits)).toThrow(new ConfigError(`scope catalog: ${why}`))
    }
  })
})
