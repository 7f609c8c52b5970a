import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv, secrets } from './admin-client.js'

/**
 * The credits of accounts and tokens through the admin API: set, increment, decrement, remove,
 * the exact 404 and 422 answers, plans' default credits and their `credits.changed` events.
 */

let h: Harness
beforeEach(async () => {
  h = await harness(adminEnv)
})
afterEach(() => h.close())

const iso = (ms: number) => new Date(ms).toISOString()

/** `app.inject` for every method the credits routes take (PUT too). */
async function send(method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, body?: unknown) {
  const res = await h.app.inject({
    method,
    url: `/admin/v1${url}`,
    headers: {
      authorization: `Bearer ${secrets.k1}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  })
  return { status: res.statusCode, body: res.body === '' ? undefined : res.json() }
}

const invalid = { message: 'resources are invalid' }

describe('setting credits', () => {
  it('sets, increments, decrements (never below 0) and removes an account balance', async () => {
    const put = await send('PUT', '/accounts/alice/credits', { remaining: 100 })
    expect(put).toEqual({
      status: 200,
      body: { remaining: 100, balance: 100, refill: null, period: iso(T0) },
    })
    h.clock.now = T0 + 1000
    const up = await send('POST', '/accounts/alice/credits/increment', { amount: 50 })
    expect(up.body).toEqual({ remaining: 150, balance: 150, refill: null, period: iso(T0) })
    const down = await send('POST', '/accounts/alice/credits/decrement', { amount: 30 })
    expect(down.body).toEqual({ remaining: 120, balance: 150, refill: null, period: iso(T0) })
    const floor = await send('POST', '/accounts/alice/credits/decrement', { amount: 500 })
    expect(floor.body).toEqual({ remaining: 0, balance: 150, refill: null, period: iso(T0) })
    expect(await send('GET', '/accounts/alice/credits')).toEqual(floor)
    expect(await send('DELETE', '/accounts/alice/credits')).toEqual({
      status: 204,
      body: undefined,
    })
    expect(await send('GET', '/accounts/alice/credits')).toEqual({
      status: 404,
      body: { message: 'Not found', details: 'there are no credits' },
    })
  })

  it("sets a token's balance with a monthly refill, apart from its account's", async () => {
    const sk = await h.token('alice', all)
    const path = `/accounts/alice/tokens/${sk.id}/credits`
    const refill = { interval: 'monthly', amount: 1000, day: 15 }
    const put = await send('PUT', path, { remaining: 10, refill })
    expect(put).toEqual({
      status: 200,
      body: {
        remaining: 10,
        balance: 10,
        refill,
        period: iso(T0),
        nextRefill: '2026-12-15T00:00:00.000Z',
      },
    })
    expect((await send('GET', '/accounts/alice/credits')).status).toBe(404)
    // Absent keeps the refill; null removes it; monthly without a day refills on the 1st.
    expect((await send('PUT', path, { remaining: 7 })).body.refill).toEqual(refill)
    expect((await send('PUT', path, { remaining: 7, refill: null })).body).toEqual({
      remaining: 7,
      balance: 7,
      refill: null,
      period: iso(T0),
    })
    const first = await send('PUT', path, {
      remaining: 1,
      refill: { interval: 'monthly', amount: 5 },
    })
    expect(first.body.refill).toEqual({ interval: 'monthly', amount: 5, day: 1 })
    expect(first.body.nextRefill).toBe('2026-12-01T00:00:00.000Z')
    const daily = await send('PUT', path, {
      remaining: 1,
      refill: { interval: 'daily', amount: 5 },
    })
    expect(daily.body.nextRefill).toBe('2026-11-23T00:00:00.000Z')
  })

  it('writes a credits.changed event per change, with the operator key as actor', async () => {
    const sk = await h.token('alice', all)
    await send('PUT', '/accounts/alice/credits', { remaining: 5 })
    await send('POST', `/accounts/alice/credits/increment`, { amount: 2 })
    await send('PUT', `/accounts/alice/tokens/${sk.id}/credits`, { remaining: 3 })
    await send('DELETE', `/accounts/alice/tokens/${sk.id}/credits`)
    const events = await h.ctx.audit.list({
      username: 'alice',
      actions: ['credits.changed'],
      limit: 10,
    })
    expect(
      events.map((e) => ({ actor: e.actor, target: e.target, details: e.details })).reverse(),
    ).toEqual([
      {
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'account', id: 'alice' },
        details: { operation: 'set', remaining: 5, refill: null },
      },
      {
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'account', id: 'alice' },
        details: { operation: 'increment', amount: 2, remaining: 7 },
      },
      {
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'token', id: sk.id },
        details: { operation: 'set', remaining: 3, refill: null },
      },
      {
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'token', id: sk.id },
        details: { operation: 'remove' },
      },
    ])
  })

  it('does not hand a deleted account’s credits to a new account of the same name', async () => {
    await send('PUT', '/accounts/alice/credits', { remaining: 5 })
    await h.ctx.accounts.remove('alice', cliActor)
    h.clock.now = T0 + 2 * 3_600_000
    await h.ctx.accounts.create('alice', undefined, [], cliActor)
    expect((await send('GET', '/accounts/alice/credits')).status).toBe(404)
  })
})

describe('refusals', () => {
  it('answers 404 for an unknown account, token, or a target without credits', async () => {
    const bobs = await h.token('bob', all)
    const noUser = { status: 404, body: { message: 'No such user' } }
    const noToken = { status: 404, body: { message: 'Not found' } }
    expect(await send('GET', '/accounts/nobody/credits')).toEqual(noUser)
    expect(await send('PUT', '/accounts/nobody/credits', { remaining: 1 })).toEqual(noUser)
    expect(await send('GET', `/accounts/alice/tokens/${bobs.id}/credits`)).toEqual(noToken)
    expect(await send('GET', '/accounts/alice/tokens/nope/credits')).toEqual(noToken)
    expect(await send('GET', `/accounts/alice/tokens/${'x'.repeat(300)}/credits`)).toEqual(noToken)
    const missing = { message: 'Not found', details: 'the account carries no credits' }
    expect(await send('POST', '/accounts/alice/credits/increment', { amount: 1 })).toEqual({
      status: 404,
      body: missing,
    })
    expect(await send('DELETE', '/accounts/alice/credits')).toEqual({ status: 404, body: missing })
    expect(await send('DELETE', `/accounts/bob/tokens/${bobs.id}/credits`)).toEqual({
      status: 404,
      body: { message: 'Not found', details: 'the token carries no credits' },
    })
  })

  it('answers 422 to a bad body, never 500', async () => {
    const bodies: unknown[] = [
      undefined,
      {},
      { remaining: -1 },
      { remaining: 1.5 },
      { remaining: '5' },
      { remaining: 2 ** 53 },
      { remaining: 1, extra: true },
      { remaining: 1, refill: { interval: 'weekly', amount: 1 } },
      { remaining: 1, refill: { interval: 'monthly', amount: 1, day: 29 } },
      { remaining: 1, refill: { interval: 'monthly', amount: 1, day: 0 } },
      { remaining: 1, refill: { interval: 'daily', amount: 1, day: 3 } },
      { remaining: 1, refill: { interval: 'daily' } },
      { remaining: 1, refill: 'daily' },
      [1],
    ]
    for (const body of bodies) {
      const res = await send('PUT', '/accounts/alice/credits', body)
      expect({ body, status: res.status, message: res.body.message }).toEqual({
        body,
        status: 422,
        message: invalid.message,
      })
    }
    await send('PUT', '/accounts/alice/credits', { remaining: 2 ** 53 - 2 })
    for (const amount of [0, -1, 1.5, '1', null]) {
      const res = await send('POST', '/accounts/alice/credits/increment', { amount })
      expect(res).toEqual({
        status: 422,
        body: { ...invalid, details: 'amount must be an integer of at least 1' },
      })
    }
    expect(await send('POST', '/accounts/alice/credits/increment', { amount: 5 })).toEqual({
      status: 422,
      body: { ...invalid, details: `credits may not exceed ${2 ** 53 - 1}` },
    })
    for (const [body, details] of [
      [{}, 'account is required'],
      [{ account: 'alice', want: 0 }, 'want must be an integer of at least 1'],
      [{ account: 5, want: 1 }, 'account must be a string of at most 32 characters'],
    ] as const) {
      expect(await send('POST', '/credits/leases', body)).toEqual({
        status: 422,
        body: { ...invalid, details },
      })
    }
  })

  it('answers 401 without an operator key', async () => {
    const res = await admin(h.app, 'GET', '/accounts/alice/credits', undefined, null)
    expect(res).toMatchObject({ status: 401, body: { message: 'Unauthorized' } })
  })
})

describe('plans', () => {
  /** The default catalog with credits on the pro plan. */
  async function withPlanCredits() {
    await h.close()
    const source = readFileSync(
      path.join(import.meta.dirname, '../../catalog/default.yaml'),
      'utf8',
    )
    const file = path.join(tmpdir(), `tessera-plan-credits-${process.pid}-${Date.now()}.yaml`)
    writeFileSync(
      file,
      source.replace(
        '    # credits: { amount: 10000, refill: monthly, day: 1 }',
        '    credits: { amount: 1000, refill: monthly, day: 1 }',
      ),
    )
    h = await harness({ ...adminEnv, SCOPES_FILE: file })
    return file
  }

  it("gives an account on the plan the plan's credits until an operator changes them", async () => {
    const file = await withPlanCredits()
    rmSync(file)
    await h.ctx.accounts.create('carol', 'pro', [], cliActor)
    const planned = {
      remaining: 1000,
      balance: 1000,
      refill: { interval: 'monthly', amount: 1000, day: 1 },
      period: iso(T0),
      nextRefill: '2026-12-01T00:00:00.000Z',
      plan: true,
    }
    expect(await send('GET', '/accounts/carol/credits')).toEqual({ status: 200, body: planned })
    expect((await send('GET', '/accounts/alice/credits')).status).toBe(404)
    const spent = await h.ctx.credits.spend('carol', undefined, 10)
    expect(spent).toEqual({ ok: true, account: 990 })
    const changed = await send('POST', '/accounts/carol/credits/increment', { amount: 10 })
    expect(changed.body).toEqual({ ...planned, remaining: 1000, balance: 1010, plan: undefined })
    // Removed: the plan's credits again, afresh.
    await send('DELETE', '/accounts/carol/credits')
    h.clock.now = T0 + 5000
    const again = await send('GET', '/accounts/carol/credits')
    expect(again.body).toEqual({ ...planned, period: iso(T0 + 5000) })
  })
})
