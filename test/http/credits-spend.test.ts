import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type AppContext, createContext } from '../../src/context.js'
import { dialect } from '../dialect.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv, secrets } from './admin-client.js'

/**
 * Spending credits: introspection's cost and `credits_exhausted`, both balances or neither,
 * concurrent spends from two contexts, refills at their moment, thresholds once a period.
 */

let h: Harness
beforeEach(async () => {
  h = await harness({ ...adminEnv, CREDIT_THRESHOLDS: '50,100' })
})
afterEach(() => h.close())

const introspect = async (body: Record<string, unknown>) =>
  (await admin(h.app, 'POST', '/introspect', body)).body

async function introspectForm(form: string) {
  const res = await h.app.inject({
    method: 'POST',
    url: '/admin/v1/introspect',
    headers: {
      authorization: `Bearer ${secrets.k1}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: form,
  })
  return { status: res.statusCode, body: res.json() }
}

const exhausted = { active: false, code: 'TokenValid', reason: 'credits_exhausted' }
const tokenCredits = (id: string, remaining: number) =>
  h.ctx.credits.set({ account: 'alice', tokenId: id }, { remaining })
const accountCredits = (remaining: number, refill?: { interval: 'daily'; amount: number }) =>
  h.ctx.credits.set({ account: 'alice' }, { remaining, ...(refill ? { refill } : {}) })

describe('introspection', () => {
  it('spends the cost of a metered token and says the balances after', async () => {
    const sk = await h.token('alice', all)
    const plain = await introspect({ token: sk.token })
    expect(plain.credits).toBeUndefined()
    await tokenCredits(sk.id, 5)
    expect((await introspect({ token: sk.token, cost: 2 })).credits).toEqual({ token: 3 })
    expect((await introspect({ token: sk.token })).credits).toEqual({ token: 2 })
    expect(await introspect({ token: sk.token, cost: 3 })).toEqual(exhausted)
    expect((await introspect({ token: sk.token, cost: 0 })).credits).toEqual({ token: 2 })
    expect((await h.ctx.credits.get({ account: 'alice', tokenId: sk.id }))?.remaining).toBe(2)
    const active = await introspect({ token: sk.token, cost: 2 })
    expect(active).toEqual({ ...plain, credits: { token: 0 } })
    expect(await introspect({ token: sk.token })).toEqual(exhausted)
    expect((await introspect({ token: sk.token, cost: 0 })).active).toBe(true)
  })

  it("spends the token's and the account's balance, or neither", async () => {
    const sk = await h.token('alice', all)
    await tokenCredits(sk.id, 10)
    await accountCredits(4)
    expect((await introspect({ token: sk.token, cost: 3 })).credits).toEqual({
      token: 7,
      account: 1,
    })
    // The account is short: the token keeps its 7.
    expect(await introspect({ token: sk.token, cost: 2 })).toEqual(exhausted)
    expect(await h.ctx.credits.spend('alice', sk.id, 0)).toEqual({ ok: true, token: 7, account: 1 })
    // A tk and the default pk spend the account's alone.
    const pk = h.alice.defaultToken.token as string
    expect((await introspect({ token: pk, cost: 1 })).credits).toEqual({ account: 0 })
    expect(await introspect({ token: pk })).toEqual(exhausted)
  })

  it('takes the cost from a form, and refuses a cost that is not a whole number', async () => {
    const sk = await h.token('alice', all)
    await tokenCredits(sk.id, 10)
    const form = await introspectForm(`token=${sk.token}&cost=4&cost=1`)
    expect(form.body.credits).toEqual({ token: 6 })
    for (const cost of ['-1', '1.5', 'x', '', '1e3', '9999999999999999']) {
      const res = await introspectForm(`token=${sk.token}&cost=${cost}`)
      expect({ cost, ...res }).toEqual({
        cost,
        status: 422,
        body: {
          message: 'resources are invalid',
          details: 'cost must be an integer of at least 0',
        },
      })
    }
    for (const cost of ['2', -1, 0.5, null, 2 ** 53]) {
      const res = await admin(h.app, 'POST', '/introspect', { token: sk.token, cost })
      expect(res.status).toBe(422)
    }
    expect((await h.ctx.credits.get({ account: 'alice', tokenId: sk.id }))?.remaining).toBe(6)
  })

  it('counts each introspection once, by its outcome, against the token', async () => {
    const sk = await h.token('alice', all)
    await tokenCredits(sk.id, 1)
    await introspect({ token: sk.token })
    await introspect({ token: sk.token })
    await introspect({ token: sk.token, cost: 0 })
    await introspect({ token: 'nope' })
    // A verifier's check: it reports its own decisions, so this one is not counted.
    await introspect({ token: sk.token, cost: 0, count: false })
    await introspect({ token: 'nope', count: false })
    await h.ctx.usage.flush()
    const range = { from: T0 - 3_600_000, to: T0 + 3_600_000 }
    const tokens = await h.ctx.usage.byToken('alice', range)
    expect(tokens).toEqual([{ token: sk.id, outcomes: { valid: 2, credits_exhausted: 1 } }])
    expect(await h.ctx.usage.byToken('', range)).toEqual([
      { token: '', outcomes: { malformed: 1 } },
    ])
  })

  it('never spends credits on retrieve', async () => {
    const sk = await h.token('alice', all)
    await tokenCredits(sk.id, 1)
    expect((await call(h.app, 'GET', '/tokens/v2', sk.token)).body.code).toBe('TokenValid')
    expect((await h.ctx.credits.get({ account: 'alice', tokenId: sk.id }))?.remaining).toBe(1)
  })
})

describe('concurrent spends', () => {
  let other: AppContext | undefined
  afterEach(async () => {
    await other?.close()
    other = undefined
  })

  // Two contexts are two instances on PostgreSQL; SQLite serves one instance (one context).
  it('never takes a balance below 0 from two contexts at once', async () => {
    if (dialect === 'postgres') {
      other = await createContext(h.ctx.config, { now: () => h.clock.now })
    }
    const sk = await h.token('alice', all)
    await tokenCredits(sk.id, 40)
    await accountCredits(25)
    const pick = (i: number) => (i % 2 === 0 ? h.ctx : (other ?? h.ctx)).credits
    // The token's and the account's balance, the account's alone (a tk), and leases, at once.
    const spends = Array.from({ length: 90 }, (_, i) => pick(i).spend('alice', sk.id, 1))
    const shared = Array.from({ length: 30 }, (_, i) => pick(i).spend('alice', undefined, 1))
    const leases = Array.from({ length: 10 }, (_, i) => pick(i).lease('alice', sk.id, 3))
    const [a, b, c] = await Promise.all([
      Promise.all(spends),
      Promise.all(shared),
      Promise.all(leases),
    ])
    const spent = a.filter((r) => r?.ok).length
    const granted = c.reduce((n, l) => n + (l.granted ?? 0), 0)
    expect(spent + b.filter((r) => r?.ok).length + granted).toBe(25)
    expect((await h.ctx.credits.get({ account: 'alice' }))?.remaining).toBe(0)
    expect((await h.ctx.credits.get({ account: 'alice', tokenId: sk.id }))?.remaining).toBe(
      40 - spent - granted,
    )
  })
})

describe('refills', () => {
  it('sets the balance at 00:00 UTC, not a millisecond before', async () => {
    await accountCredits(100, { interval: 'daily', amount: 80 })
    expect(await h.ctx.credits.spend('alice', undefined, 30)).toEqual({ ok: true, account: 70 })
    const midnight = Date.parse('2026-11-23T00:00:00.000Z')
    h.clock.now = midnight - 1
    expect((await h.ctx.credits.get({ account: 'alice' }))?.remaining).toBe(70)
    h.clock.now = midnight
    expect(await h.ctx.credits.get({ account: 'alice' })).toEqual({
      remaining: 80,
      balance: 80,
      refill: { interval: 'daily', amount: 80 },
      period: '2026-11-23T00:00:00.000Z',
      nextRefill: '2026-11-24T00:00:00.000Z',
    })
    // Days later: one refill, from the last moment.
    h.clock.now = Date.parse('2026-11-27T13:00:00.000Z')
    expect(await h.ctx.credits.spend('alice', undefined, 5)).toEqual({ ok: true, account: 75 })
    expect((await h.ctx.credits.get({ account: 'alice' }))?.period).toBe('2026-11-27T00:00:00.000Z')
  })

  it('refills monthly on its day', async () => {
    const refill = { interval: 'monthly' as const, amount: 9, day: 28 }
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 1, refill })
    h.clock.now = Date.parse('2026-11-27T23:59:59.999Z')
    expect((await h.ctx.credits.get({ account: 'alice' }))?.remaining).toBe(1)
    h.clock.now = Date.parse('2026-11-28T00:00:00.000Z')
    const after = await h.ctx.credits.get({ account: 'alice' })
    expect(after).toMatchObject({ remaining: 9, nextRefill: '2026-12-28T00:00:00.000Z' })
  })
})

describe('thresholds', () => {
  it('sends credits.threshold once per threshold and period', async () => {
    await accountCredits(10, { interval: 'daily', amount: 10 })
    const events = async () =>
      (await h.ctx.audit.list({ username: 'alice', actions: ['credits.threshold'], limit: 10 }))
        .reverse()
        .map((e) => ({ target: e.target, details: e.details, at: e.at }))
    await h.ctx.credits.spend('alice', undefined, 4)
    expect(await events()).toEqual([])
    await h.ctx.credits.spend('alice', undefined, 1)
    await h.ctx.credits.spend('alice', undefined, 1)
    const half = {
      target: { type: 'account', id: 'alice' },
      details: { threshold: 50, remaining: 5, balance: 10 },
      at: new Date(T0).toISOString(),
    }
    expect(await events()).toEqual([half])
    await h.ctx.credits.spend('alice', undefined, 4)
    const full = { ...half, details: { threshold: 100, remaining: 0, balance: 10 } }
    expect(await events()).toEqual([half, full])
    await h.ctx.credits.spend('alice', undefined, 1)
    expect(await events()).toEqual([half, full])
    // The refill arms them again; a jump past both sends both.
    h.clock.now = Date.parse('2026-11-23T00:00:00.000Z')
    await h.ctx.credits.spend('alice', undefined, 10)
    const at = '2026-11-23T00:00:00.000Z'
    expect((await events()).slice(2)).toEqual([
      { ...half, at, details: { threshold: 50, remaining: 0, balance: 10 } },
      { ...full, at },
    ])
  })
})
