import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Returned } from '../../src/usage/credits.js'
import { all, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Verifiers' leases: taken off both balances at once, ending at the next refill, and their
 * unspent part credited back only in the period they were granted in.
 */

let h: Harness
beforeEach(async () => {
  h = await harness(adminEnv)
})
afterEach(() => h.close())

const lease = async (body: Record<string, unknown>) => admin(h.app, 'POST', '/credits/leases', body)
const remaining = async (tokenId?: string) =>
  (await h.ctx.credits.get({ account: 'alice', ...(tokenId ? { tokenId } : {}) }))?.remaining
const giveBack = (returned: Returned[]) =>
  h.ctx.db.transaction().execute((trx) => h.ctx.credits.returnLeases(trx, returned))
const iso = (ms: number) => new Date(ms).toISOString()

describe('leases', () => {
  it('grants at most what both balances hold, at once, for a minute', async () => {
    const sk = await h.token('alice', all)
    expect(await lease({ account: 'alice', token: sk.id, want: 10 })).toMatchObject({
      status: 200,
      body: { granted: null },
    })
    await h.ctx.credits.set({ account: 'alice', tokenId: sk.id }, { remaining: 50 })
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 12 })
    const first = await lease({ account: 'alice', token: sk.id, want: 10 })
    expect(first.status).toBe(200)
    expect(Object.keys(first.body)).toEqual(['granted', 'lease', 'expires', 'ttlMs'])
    expect(first.body).toMatchObject({ granted: 10, expires: iso(T0 + 60_000), ttlMs: 60_000 })
    expect(first.body.lease).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect([await remaining(sk.id), await remaining()]).toEqual([40, 2])
    const second = await lease({ account: 'alice', token: sk.id, want: 10 })
    expect(second.body.granted).toBe(2)
    expect(await lease({ account: 'alice', token: sk.id, want: 10 })).toEqual({
      status: 200,
      body: { granted: 0, expires: iso(T0 + 60_000), ttlMs: 60_000 },
      headers: expect.anything(),
    })
    // A token without credits of its own spends the account's.
    const tk = await lease({ account: 'alice', want: 1 })
    expect(tk.body).toEqual({ granted: 0, expires: iso(T0 + 60_000), ttlMs: 60_000 })
  })

  it('ends a lease at the next refill when that comes within the minute', async () => {
    const refill = { interval: 'daily' as const, amount: 5 }
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 5, refill })
    h.clock.now = Date.parse('2026-11-22T23:59:30.000Z')
    const res = await lease({ account: 'alice', want: 2 })
    expect(res.body).toMatchObject({
      granted: 2,
      expires: '2026-11-23T00:00:00.000Z',
      ttlMs: 30_000,
    })
  })

  it('answers 404 for an unknown account or a token not of it', async () => {
    const bobs = await h.token('bob', all)
    expect(await lease({ account: 'nobody', want: 1 })).toMatchObject({
      status: 404,
      body: { message: 'No such user' },
    })
    expect(await lease({ account: 'alice', token: bobs.id, want: 1 })).toMatchObject({
      status: 404,
      body: { message: 'Not found' },
    })
  })
})

describe('returns', () => {
  it('credits back the unspent part, never more than was granted', async () => {
    const sk = await h.token('alice', all)
    await h.ctx.credits.set({ account: 'alice', tokenId: sk.id }, { remaining: 50 })
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 30 })
    const { lease: id } = await h.ctx.credits.lease('alice', sk.id, 10)
    expect([await remaining(sk.id), await remaining()]).toEqual([40, 20])
    expect(
      await giveBack([{ account: 'alice', token: sk.id, amount: 4, lease: id as string }]),
    ).toBe(2)
    expect([await remaining(sk.id), await remaining()]).toEqual([44, 24])
    const { lease: other } = await h.ctx.credits.lease('alice', sk.id, 5)
    expect([await remaining(sk.id), await remaining()]).toEqual([39, 19])
    await giveBack([{ account: 'alice', token: sk.id, amount: 500, lease: other as string }])
    expect([await remaining(sk.id), await remaining()]).toEqual([44, 24])
    // Not one of ours: ignored.
    await giveBack([{ account: 'alice', token: sk.id, amount: 5, lease: 'forged' }])
    expect([await remaining(sk.id), await remaining()]).toEqual([44, 24])
  })

  it('does not credit a return after a refill or a set', async () => {
    const refill = { interval: 'daily' as const, amount: 100 }
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 100, refill })
    const before = await h.ctx.credits.lease('alice', undefined, 30)
    h.clock.now = Date.parse('2026-11-23T00:00:00.000Z')
    expect(await remaining()).toBe(100)
    expect(await giveBack([{ account: 'alice', amount: 30, lease: before.lease as string }])).toBe(
      0,
    )
    expect(await remaining()).toBe(100)
    const granted = await h.ctx.credits.lease('alice', undefined, 30)
    expect(await remaining()).toBe(70)
    h.clock.now += 1000
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 50 })
    expect(await giveBack([{ account: 'alice', amount: 30, lease: granted.lease as string }])).toBe(
      0,
    )
    expect(await remaining()).toBe(50)
  })

  it('never returns above the balance of the period', async () => {
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 10 })
    const { lease: id } = await h.ctx.credits.lease('alice', undefined, 4)
    await h.ctx.credits.adjust({ account: 'alice' }, 3)
    expect(await remaining()).toBe(9)
    await giveBack([{ account: 'alice', amount: 4, lease: id as string }])
    expect(await remaining()).toBe(13)
    await giveBack([{ account: 'alice', amount: 4, lease: id as string }])
    expect(await remaining()).toBe(13)
  })
})
