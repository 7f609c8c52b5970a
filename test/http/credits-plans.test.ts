import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Plan balances follow the account's plan (rewritten or removed when the plan or its credits
 * change; an operator's balance does not follow); a read (GET, introspection with cost 0)
 * neither locks nor writes.
 */

let h: Harness | undefined
afterEach(() => h?.close())

const iso = (ms: number) => new Date(ms).toISOString()
const pro = '    credits: { amount: 1000, refill: monthly, day: 1 }'

/** The default catalog with credits on pro, and on standard when `standard` is given. */
async function withPlans(standard?: string): Promise<Harness> {
  const source = readFileSync(path.join(import.meta.dirname, '../../catalog/default.yaml'), 'utf8')
  let yaml = source.replace('    # credits: { amount: 10000, refill: monthly, day: 1 }', pro)
  if (standard !== undefined) yaml = yaml.replace('\n  pro:\n', `\n${standard}\n  pro:\n`)
  const file = path.join(tmpdir(), `tessera-plans-${process.pid}-${Date.now()}.yaml`)
  writeFileSync(file, yaml)
  try {
    h = await harness({ ...adminEnv, SCOPES_FILE: file })
  } finally {
    rmSync(file)
  }
  await h.ctx.accounts.create('carol', 'pro', [], cliActor)
  return h
}

const plan = (h: Harness, name: string) => h.ctx.accounts.change('carol', { plan: name }, cliActor)
const get = async (h: Harness) => {
  const res = await admin(h.app, 'GET', '/accounts/carol/credits')
  return res.status === 200 ? res.body : res.status
}
const stored = (h: Harness) =>
  h.ctx.db
    .selectFrom('credits')
    .select(['remaining', 'period', 'plan'])
    .where('account', '=', 'carol')
    .execute()
    .then((rows) => rows.map((r) => ({ ...r, remaining: Number(r.remaining) })))

const proCredits = {
  remaining: 1000,
  balance: 1000,
  refill: { interval: 'monthly', amount: 1000, day: 1 },
  nextRefill: '2026-12-01T00:00:00.000Z',
  plan: true,
}

describe('plan balances', () => {
  it('are removed when the new plan has none, and given afresh when it has', async () => {
    const h = await withPlans()
    expect((await h.ctx.credits.spend('carol', undefined, 1000))?.ok).toBe(true)
    expect(await stored(h)).toEqual([{ remaining: 0, period: iso(T0), plan: 'pro 1000 monthly 1' }])
    h.clock.now = T0 + 1000
    await plan(h, 'standard')
    expect(await get(h)).toBe(404)
    expect(await h.ctx.credits.spend('carol', undefined, 1)).toBeUndefined()
    expect(await stored(h)).toEqual([])
    h.clock.now = T0 + 2000
    await plan(h, 'pro')
    expect(await get(h)).toEqual({ ...proCredits, period: iso(T0 + 2000) })
    expect(await h.ctx.credits.spend('carol', undefined, 1)).toEqual({ ok: true, account: 999 })
  })

  it("are rewritten to the new plan's, and a lease of the old one is not credited", async () => {
    const h = await withPlans('    credits: { amount: 50, refill: daily }')
    const { lease } = await h.ctx.credits.lease('carol', undefined, 100)
    expect(await get(h)).toEqual({ ...proCredits, remaining: 900, period: iso(T0) })
    h.clock.now = T0 + 1000
    await plan(h, 'standard')
    const standard = {
      remaining: 50,
      balance: 50,
      refill: { interval: 'daily', amount: 50 },
      period: iso(T0 + 1000),
      nextRefill: '2026-11-23T00:00:00.000Z',
      plan: true,
    }
    expect(await get(h)).toEqual(standard)
    expect(await h.ctx.credits.spend('carol', undefined, 1)).toEqual({ ok: true, account: 49 })
    const back = [{ account: 'carol', amount: 100, lease: lease as string }]
    await h.ctx.db.transaction().execute((trx) => h.ctx.credits.returnLeases(trx, back))
    expect(await get(h)).toEqual({ ...standard, remaining: 49 })
    expect(await stored(h)).toEqual([
      { remaining: 49, period: iso(T0 + 1000), plan: 'standard 50 daily -' },
    ])
  })

  it('set or changed by an operator do not follow the plan', async () => {
    const h = await withPlans()
    await h.ctx.credits.spend('carol', undefined, 10)
    await h.ctx.credits.adjust({ account: 'carol' }, 5)
    await plan(h, 'standard')
    expect(await get(h)).toEqual({
      ...proCredits,
      remaining: 995,
      balance: 1005,
      period: iso(T0),
      plan: undefined,
    })
    await h.ctx.credits.set({ account: 'carol' }, { remaining: 7, refill: null })
    await plan(h, 'pro')
    await plan(h, 'standard')
    expect(await get(h)).toEqual({ remaining: 7, balance: 7, refill: null, period: iso(T0) })
    expect(await stored(h)).toEqual([{ remaining: 7, period: iso(T0), plan: null }])
  })
})

describe('reading credits', () => {
  it('writes nothing on GET or an introspection of cost 0', async () => {
    const h = await withPlans()
    const sk = await h.token('carol', all)
    const introspect = async (cost: number) =>
      (await admin(h.app, 'POST', '/introspect', { token: sk.token, cost })).body.credits
    expect(await get(h)).toEqual({ ...proCredits, period: iso(T0) })
    expect(await introspect(0)).toEqual({ account: 1000 })
    expect(await stored(h)).toEqual([])
    expect(await introspect(1)).toEqual({ account: 999 })
    // Past the refill: answered refilled, the row left as it was until something is spent.
    h.clock.now = Date.parse('2026-12-01T00:00:00.000Z')
    const refilled = {
      ...proCredits,
      period: iso(h.clock.now),
      nextRefill: '2027-01-01T00:00:00.000Z',
    }
    expect(await get(h)).toEqual(refilled)
    expect(await introspect(0)).toEqual({ account: 1000 })
    const before = [{ remaining: 999, period: iso(T0), plan: 'pro 1000 monthly 1' }]
    expect(await stored(h)).toEqual(before)
    // Off the plan: answered unmetered, the row removed only by a write.
    await plan(h, 'standard')
    expect(await get(h)).toBe(404)
    expect(await introspect(0)).toBeUndefined()
    expect(await stored(h)).toEqual(before)
  })
})
