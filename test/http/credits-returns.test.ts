import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Returned } from '../../src/usage/credits.js'
import { all, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Returned leases are single-use and bound to what they were granted to: a lease is credited
 * back once, to its own account and token, never more than its grant; a made-up id is skipped;
 * leases are kept until a day after they expire.
 */

let h: Harness
beforeEach(async () => {
  h = await harness(adminEnv)
})
afterEach(() => h.close())

const report = (batch: string, returned: unknown[]) =>
  admin(h.app, 'POST', '/usage/reports', { reporter: 'edge-1', batch, counts: [], returned })
const remaining = async (account: string, tokenId?: string) =>
  (await h.ctx.credits.get({ account, ...(tokenId ? { tokenId } : {}) }))?.remaining
const giveBack = (returned: Returned[]) =>
  h.ctx.db.transaction().execute((trx) => h.ctx.credits.returnLeases(trx, returned))
const stored = (id: string) =>
  h.ctx.db
    .selectFrom('credit_leases')
    .select(['account', 'token_id', 'granted', 'returned', 'expires'])
    .where('id', '=', id)
    .executeTakeFirst()

describe('a returned lease', () => {
  it('is credited once, whatever the number of batches that carry it', async () => {
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 100 })
    const { lease, granted } = await h.ctx.credits.lease('alice', undefined, 50)
    expect(granted).toBe(50)
    const back = [{ account: 'alice', amount: 10, lease }]
    for (const batch of ['b1', 'b2', 'b3']) {
      expect(await report(batch, back)).toMatchObject({ status: 200, body: { counted: true } })
    }
    expect(await remaining('alice')).toBe(60)
    expect(await stored(lease as string)).toEqual({
      account: 'alice',
      token_id: '',
      granted: expect.anything(),
      returned: expect.anything(),
      expires: new Date(T0 + 60_000).toISOString(),
    })
    const row = await stored(lease as string)
    expect([Number(row?.granted), Number(row?.returned)]).toEqual([50, 10])
    // Twice in one batch: once.
    const { lease: again } = await h.ctx.credits.lease('alice', undefined, 20)
    expect(await remaining('alice')).toBe(40)
    const twice = { account: 'alice', amount: 5, lease: again as string }
    expect(await giveBack([twice, twice])).toBe(1)
    expect(await remaining('alice')).toBe(45)
  })

  it("asked for a token without credits of its own, is credited back to the account's", async () => {
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 100 })
    const sk = await h.token('alice', all)
    const { lease, granted } = await h.ctx.credits.lease('alice', sk.id, 30)
    expect(granted).toBe(30)
    expect((await stored(lease as string))?.token_id).toBe(sk.id)
    // Returned as the verifier asked for it: naming the token.
    expect(
      await giveBack([{ account: 'alice', token: sk.id, amount: 12, lease: lease as string }]),
    ).toBe(1)
    expect(await remaining('alice')).toBe(82)
    expect(await remaining('alice', sk.id)).toBeUndefined()
  })

  it('is credited only to the account and token it was granted to', async () => {
    const refill = { interval: 'monthly' as const, amount: 1000, day: 1 }
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 1000, refill })
    await h.ctx.credits.set({ account: 'bob' }, { remaining: 1000, refill })
    // Both refilled on Dec 1: the same period for both accounts.
    h.clock.now = Date.parse('2026-12-02T00:00:00.000Z')
    await h.ctx.credits.spend('bob', undefined, 900)
    const sk = await h.token('alice', all)
    const other = await h.token('alice', all)
    await h.ctx.credits.set({ account: 'alice', tokenId: sk.id }, { remaining: 100 })
    await h.ctx.credits.set({ account: 'alice', tokenId: other.id }, { remaining: 100 })
    const { lease } = await h.ctx.credits.lease('alice', sk.id, 50)
    const id = lease as string
    expect([await remaining('alice'), await remaining('alice', sk.id)]).toEqual([950, 50])
    const wrong: Returned[] = [
      { account: 'bob', token: sk.id, amount: 50, lease: id },
      { account: 'bob', amount: 50, lease: id },
      { account: 'alice', token: other.id, amount: 50, lease: id },
      { account: 'alice', amount: 50, lease: id },
    ]
    for (const r of wrong) expect(await giveBack([r])).toBe(0)
    expect(await remaining('bob')).toBe(100)
    expect(await remaining('alice', other.id)).toBe(100)
    expect([await remaining('alice'), await remaining('alice', sk.id)]).toEqual([950, 50])
    // Its own: credited, to both balances, never more than was granted.
    expect(await giveBack([{ account: 'alice', token: sk.id, amount: 500, lease: id }])).toBe(2)
    expect([await remaining('alice'), await remaining('alice', sk.id)]).toEqual([1000, 100])
  })

  it('is skipped when Tessera never granted it', async () => {
    await h.ctx.credits.set({ account: 'bob' }, { remaining: 1000 })
    await h.ctx.credits.spend('bob', undefined, 900)
    const period = (await h.ctx.credits.get({ account: 'bob' }))?.period as string
    const forged = [
      `-.${Date.parse(period).toString(36)}.zzzzzz.abcdefgh`,
      'AAAAAAAAAAAAAAAAAAAAAA',
    ]
    for (const [i, lease] of forged.entries()) {
      expect(await report(`f${i}`, [{ account: 'bob', amount: 1000, lease }])).toMatchObject({
        status: 200,
        body: { counted: true },
      })
    }
    expect(await remaining('bob')).toBe(100)
  })

  it('is kept until a day after it expires, then pruned and no longer credited', async () => {
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 100 })
    const { lease, expires } = await h.ctx.credits.lease('alice', undefined, 30)
    h.clock.now = T0 + 1000
    const { lease: later } = await h.ctx.credits.lease('alice', undefined, 30)
    expect(await remaining('alice')).toBe(40)
    h.clock.now = Date.parse(expires as string) + 86_400_000
    await h.ctx.prune()
    expect(await stored(lease as string)).toBeDefined()
    h.clock.now += 1
    await h.ctx.prune()
    expect(await stored(lease as string)).toBeUndefined()
    expect(await stored(later as string)).toBeDefined()
    expect(await giveBack([{ account: 'alice', amount: 30, lease: lease as string }])).toBe(0)
    expect(await remaining('alice')).toBe(40)
  })
})
