import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AuditAction, cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
import type { TokenWarning } from '../../src/hygiene/hygiene.js'
import { fleetEnv } from './env.js'

/**
 * Two instances on one PostgreSQL, sweeping at the same moments with one fake clock: every
 * warning is given once per token and threshold, every idle deletion happens once, and what
 * each instance hands to mail adds up to exactly the warnings given. A policy set on one
 * instance holds for creates on the other.
 */
const fleet = fleetEnv()
const T0 = Date.parse('2026-11-22T12:00:00.000Z')
const day = 86_400_000
const hour = 3_600_000
const iso = (ms: number) => new Date(ms).toISOString()
const clock = { now: T0 }
let a: AppContext
let b: AppContext
const told: TokenWarning[] = []

const until = async (check: () => Promise<boolean>, ms = 3000) => {
  const since = performance.now()
  while (performance.now() - since < ms) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`not within ${ms} ms`)
}

beforeAll(async () => {
  const config = toConfig({ ...fleet.env, REDIS_URL: undefined, DATA_DIR: '/tmp' } as never)
  a = await createContext(config, { now: () => clock.now })
  b = await createContext(config, { now: () => clock.now })
  for (const ctx of [a, b]) {
    ;(ctx.hygiene as unknown as { deps: { onWarning: (w: TokenWarning) => void } }).deps.onWarning =
      (w) => told.push(w)
  }
  await until(async () => a.feedLive && b.feedLive)
})
afterAll(async () => {
  await a?.close()
  await b?.close()
  await fleet.drop()
})

/** The account's events of these actions, from the database both instances write. */
function eventsOf(username: string, actions: AuditAction[]) {
  return a.audit.list({ username, actions, limit: 1000 })
}

describe('two instances sweeping together', () => {
  it('give each warning once and delete each idle token once', async () => {
    const account = await a.accounts.create('fleetwarn', undefined, [], cliActor)
    const holder = a.accounts.holder(account)
    const make = (fields: { scopes: string[]; expiresAt?: string }) =>
      a.tokens.create(account, holder, fields, cliActor)
    const ending = []
    for (let i = 0; i < 12; i++) {
      ending.push(await make({ scopes: ['tokens:read'], expiresAt: iso(T0 + 8 * day + i * hour) }))
    }
    const rolled = []
    for (let i = 0; i < 6; i++) {
      const sk = await make({ scopes: ['tokens:read'] })
      rolled.push(
        await a.tokens.roll(account, holder, sk.id, { expires: iso(T0 + 20 * hour) }, cliActor),
      )
    }
    const idle = []
    for (let i = 0; i < 8; i++) idle.push(await make({ scopes: ['styles:read'] }))
    await a.accounts.setTokenPolicy('fleetwarn', { idleDays: 30 }, cliActor)

    const both = async <T>(f: (ctx: AppContext) => Promise<T>) => Promise.all([f(a), f(b)])
    const steps = [T0, T0 + 19 * hour, T0 + 2 * day, T0 + 7 * day + 1, T0 + 7 * day + 12 * hour]
    let given = 0
    for (const at of steps) {
      clock.now = at
      for (let round = 0; round < 3; round++) {
        for (const n of await both((ctx) => ctx.hygiene.sweep())) given += n
      }
    }
    const warnings = await eventsOf('fleetwarn', ['token.expiring', 'token.retiring'])
    const keys = warnings.map((e) => `${e.action} ${e.target.id} ${String(e.details?.threshold)}`)
    expect(new Set(keys).size).toBe(keys.length)
    // Each ending token: 7 days and 1 day; each rolled one: retiring, once.
    expect(keys.length).toBe(12 * 2 + 6)
    expect(given).toBe(keys.length)
    expect(told.length).toBe(keys.length)

    // Unused: those made for it, and the tokens that replaced the rolled ones (past their end,
    // the ending ones are refused already, and not warned).
    idle.push(...rolled)
    clock.now = T0 + 23 * day
    const warned = await both((ctx) => ctx.hygiene.sweepIdle())
    expect(warned[0].warned + warned[1].warned).toBe(idle.length)
    clock.now = T0 + 30 * day
    const swept = await both((ctx) => ctx.hygiene.sweepIdle())
    expect(swept[0].deleted + swept[1].deleted).toBe(idle.length)
    const idleEvents = await eventsOf('fleetwarn', ['token.idle'])
    expect(idleEvents.map((e) => e.target.id).sort()).toEqual(idle.map((t) => t.id).sort())
    const deleted = (await eventsOf('fleetwarn', ['token.deleted'])).filter(
      (e) => e.details?.reason === 'idle',
    )
    expect(deleted.map((e) => e.target.id).sort()).toEqual(idle.map((t) => t.id).sort())
    for (const t of idle) {
      expect((await b.tokens.validate(t.token as string)).code).toBe('TokenRevoked')
    }
  })

  it('holds a policy set on one instance for creates on the other', async () => {
    clock.now = T0
    const account = await a.accounts.create('fleetpolicy', undefined, [], cliActor)
    // b reads the account into its directory before the change.
    const seen = await b.accounts.find('fleetpolicy')
    expect(seen?.policy).toBeUndefined()
    await a.accounts.setTokenPolicy('fleetpolicy', { maxSkLifetimeDays: 7 }, cliActor)
    await until(async () => (await b.accounts.find('fleetpolicy'))?.policy !== undefined)
    const onB = (await b.accounts.find('fleetpolicy')) as typeof account
    await expect(
      b.tokens.create(onB, b.accounts.holder(onB), { scopes: ['tokens:read'] }, cliActor),
    ).rejects.toThrow('resources are invalid')
  })
})
