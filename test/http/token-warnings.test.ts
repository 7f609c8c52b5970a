import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import type { TokenWarning } from '../../src/hygiene/hygiene.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Warnings before things happen to tokens, with a fake clock: `token.expiring` at 7 days and at
 * 1 day, `token.retiring` an hour before a rolled token's end, `token.idle` 7 days before an idle
 * deletion; each once per token and threshold, and the deletion after the warning, never before.
 */
const day = 86_400_000
const hour = 3_600_000
const iso = (ms: number) => new Date(ms).toISOString()

let h: Harness
let writer: string
let told: TokenWarning[]

beforeEach(async () => {
  h = await harness(adminEnv)
  writer = (await h.token('alice', [...all, 'styles:read'])).token
  told = []
  // What mail would be handed: the warnings this instance gave.
  ;(h.ctx.hygiene as unknown as { deps: { onWarning: (w: TokenWarning) => void } }).deps.onWarning =
    (w) => told.push(w)
})
afterEach(() => h.close())

const create = async (body: Record<string, unknown>) => {
  const res = await call(h.app, 'POST', '/tokens/v2/alice', writer, body)
  if (res.status !== 200) throw new Error(JSON.stringify(res.body))
  return res.body as { id: string; token: string }
}
/** The account's events of an action, oldest first (the audit log answers newest first). */
const events = async (action: string) =>
  (
    (await admin(h.app, 'GET', `/accounts/alice/audit?action=${action}`)).body as {
      actor: { type: string }
      target: { id: string }
      details: Record<string, unknown>
    }[]
  ).reverse()
const at = (ms: number) => {
  h.clock.now = ms
}
const retrieve = async (token: string) => (await call(h.app, 'GET', '/tokens/v2', token)).body.code

describe('token.expiring', () => {
  it('is given at 7 days and at 1 day, once each, and again for a new end', async () => {
    const sk = await create({ scopes: ['tokens:read'], expiresAt: iso(T0 + 10 * day) })
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    at(T0 + 3 * day - 1)
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    at(T0 + 3 * day)
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    at(T0 + 9 * day)
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    at(T0 + 9 * day + hour)
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    const given = await events('token.expiring')
    expect(given.map((e) => [e.actor.type, e.target.id, e.details])).toEqual([
      ['system', sk.id, { usage: 'sk', expiresAt: iso(T0 + 10 * day), threshold: '7d' }],
      ['system', sk.id, { usage: 'sk', expiresAt: iso(T0 + 10 * day), threshold: '1d' }],
    ])
    expect(told.map((w) => [w.kind, w.account, w.token.id, w.at, w.threshold])).toEqual([
      ['expiring', 'alice', sk.id, iso(T0 + 10 * day), '7d'],
      ['expiring', 'alice', sk.id, iso(T0 + 10 * day), '1d'],
    ])
    // Extended: the new end is warned about in its turn.
    const patch = { expiresAt: iso(T0 + 20 * day) }
    expect((await call(h.app, 'PATCH', `/tokens/v2/alice/${sk.id}`, writer, patch)).status).toBe(
      200,
    )
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    at(T0 + 13 * day)
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    // Past its end: no warning, it is refused.
    at(T0 + 20 * day)
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    expect((await events('token.expiring')).length).toBe(3)
  })

  it('gives a token that ends within a day the 1-day warning alone', async () => {
    await create({ scopes: ['tokens:read'], expiresAt: iso(T0 + 12 * hour) })
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    expect((await events('token.expiring')).map((e) => e.details.threshold)).toEqual(['1d'])
  })
})

describe('token.retiring', () => {
  it('is given an hour before a rolled token ends, once', async () => {
    const sk = await create({ scopes: ['tokens:read'] })
    const roll = { expires: iso(T0 + 5 * hour) }
    expect((await call(h.app, 'POST', `/tokens/v2/alice/${sk.id}/roll`, writer, roll)).status).toBe(
      200,
    )
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    at(T0 + 4 * hour)
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    expect((await events('token.retiring')).map((e) => [e.target.id, e.details])).toEqual([
      [sk.id, { usage: 'sk', retiresAt: iso(T0 + 5 * hour) }],
    ])
  })
})

describe('idle tokens', () => {
  beforeEach(async () => {
    expect(
      (await admin(h.app, 'PUT', '/accounts/alice/token-policy', { idleDays: 30 })).status,
    ).toBe(200)
  })

  it('are warned 7 days before, and deleted after the warning, not before', async () => {
    const pk = await create({ scopes: ['styles:read'] })
    at(T0 + 23 * day - 1)
    expect(await h.ctx.hygiene.sweepIdle()).toEqual({ warned: 0, deleted: 0 })
    at(T0 + 23 * day)
    // The writer was never used either (it authorised requests, but those are not counted
    // until the meter flushes): it is warned too; the default token never is.
    const first = await h.ctx.hygiene.sweepIdle()
    expect(first.deleted).toBe(0)
    const warned = (await events('token.idle')).filter((e) => e.target.id === pk.id)
    expect(warned.map((e) => [e.actor.type, e.details])).toEqual([
      ['system', { usage: 'pk', lastUsed: null, idleDays: 30, deletesAt: iso(T0 + 30 * day) }],
    ])
    expect((await h.ctx.hygiene.sweepIdle()).warned).toBe(0)
    at(T0 + 30 * day - 1)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBe(0)
    expect(await retrieve(pk.token)).toBe('TokenValid')
    at(T0 + 30 * day)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBeGreaterThanOrEqual(1)
    expect(await retrieve(pk.token)).toBe('TokenRevoked')
    const deleted = (await events('token.deleted')).filter((e) => e.target.id === pk.id)
    expect(deleted.map((e) => [e.actor.type, e.details])).toEqual([
      ['system', { usage: 'pk', reason: 'idle', idleDays: 30, lastUsed: null }],
    ])
    expect(await retrieve(h.alice.defaultToken.token as string)).toBe('TokenValid')
  })

  it('never include a token with children: its children are its use (docs/machines.md)', async () => {
    const parent = await create({ scopes: ['styles:read'] })
    const child = await h.ctx.tokens.createChild(
      h.alice,
      h.ctx.accounts.holder(h.alice),
      parent.id,
      { scopes: ['styles:read'] },
      { type: 'cli' },
    )
    at(T0 + 23 * day)
    await h.ctx.hygiene.sweepIdle()
    const warned = (await events('token.idle')).map((e) => e.target.id)
    expect(warned).toContain(child.id)
    expect(warned).not.toContain(parent.id)
    at(T0 + 30 * day)
    await h.ctx.hygiene.sweepIdle()
    expect(await retrieve(child.token as string)).toBe('TokenRevoked')
    expect(await retrieve(parent.token)).toBe('TokenValid')
    // Its last child gone, it is idle like any other: warned now, deleted 7 days later.
    await h.ctx.hygiene.sweepIdle()
    expect((await events('token.idle')).map((e) => e.target.id)).toContain(parent.id)
  })

  it('are not deleted when used after the warning, and are warned again later', async () => {
    const pk = await create({ scopes: ['styles:read'] })
    at(T0 + 23 * day)
    await h.ctx.hygiene.sweepIdle()
    at(T0 + 25 * day)
    expect(await retrieve(pk.token)).toBe('TokenValid')
    await h.ctx.usage.flush()
    at(T0 + 30 * day)
    await h.ctx.hygiene.sweepIdle()
    expect(await retrieve(pk.token)).toBe('TokenValid')
    // Its last use is the minute of that retrieve: idle again 23 days later, warned then.
    at(T0 + 25 * day + 23 * day + 60_000)
    await h.ctx.hygiene.sweepIdle()
    const warned = (await events('token.idle')).filter((e) => e.target.id === pk.id)
    expect(warned.map((e) => e.details.lastUsed)).toEqual([null, iso(T0 + 25 * day)])
  })

  it('are warned again when the rule was off in between, and deleted 7 days after that', async () => {
    const pk = await create({ scopes: ['styles:read'] })
    at(T0 + 23 * day)
    await h.ctx.hygiene.sweepIdle()
    await admin(h.app, 'PUT', '/accounts/alice/token-policy', {})
    at(T0 + 200 * day)
    await admin(h.app, 'PUT', '/accounts/alice/token-policy', { idleDays: 30 })
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBe(0)
    expect(await retrieve(pk.token)).toBe('TokenValid')
    const warned = (await events('token.idle')).filter((e) => e.target.id === pk.id)
    expect(warned.map((e) => e.details.deletesAt)).toEqual([
      iso(T0 + 30 * day),
      iso(T0 + 207 * day),
    ])
    // Given again once, however many sweep.
    expect((await h.ctx.hygiene.sweepIdle()).warned).toBe(0)
    at(T0 + 207 * day - 1)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBe(0)
    at(T0 + 207 * day)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBeGreaterThanOrEqual(1)
    expect(await retrieve(pk.token)).toBe('TokenRevoked')
  })

  it('are warned again under a longer rule, 7 days before its own deletion', async () => {
    const pk = await create({ scopes: ['styles:read'] })
    at(T0 + 23 * day)
    await h.ctx.hygiene.sweepIdle()
    await admin(h.app, 'PUT', '/accounts/alice/token-policy', { idleDays: 60 })
    at(T0 + 30 * day)
    expect(await h.ctx.hygiene.sweepIdle()).toEqual({ warned: 0, deleted: 0 })
    at(T0 + 53 * day)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBe(0)
    const warned = (await events('token.idle')).filter((e) => e.target.id === pk.id)
    expect(warned.map((e) => [e.details.idleDays, e.details.deletesAt])).toEqual([
      [30, iso(T0 + 30 * day)],
      [60, iso(T0 + 60 * day)],
    ])
    at(T0 + 60 * day)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBeGreaterThanOrEqual(1)
    expect(await retrieve(pk.token)).toBe('TokenRevoked')
  })

  it('that a new policy finds long unused get 7 days from its warning', async () => {
    const pk = await create({ scopes: ['styles:read'] })
    await admin(h.app, 'PUT', '/accounts/alice/token-policy', {})
    at(T0 + 100 * day)
    expect(await h.ctx.hygiene.sweepIdle()).toEqual({ warned: 0, deleted: 0 })
    await admin(h.app, 'PUT', '/accounts/alice/token-policy', { idleDays: 30 })
    const first = await h.ctx.hygiene.sweepIdle()
    expect(first.deleted).toBe(0)
    const warned = (await events('token.idle')).filter((e) => e.target.id === pk.id)
    expect(warned.map((e) => e.details.deletesAt)).toEqual([iso(T0 + 107 * day)])
    const notices = await h.ctx.hygiene.upcoming('alice')
    expect(notices.filter((n) => n.token.id === pk.id).map((n) => [n.kind, n.at])).toEqual([
      ['idle', iso(T0 + 107 * day)],
    ])
    at(T0 + 107 * day - 1)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBe(0)
    at(T0 + 107 * day)
    expect((await h.ctx.hygiene.sweepIdle()).deleted).toBeGreaterThanOrEqual(1)
    expect(await retrieve(pk.token)).toBe('TokenRevoked')
  })
})

describe('the notices of an account', () => {
  it('list what ends or retires within 7 days, soonest first, for that account only', async () => {
    const soon = await create({ scopes: ['tokens:read'], expiresAt: iso(T0 + 2 * day) })
    await create({ scopes: ['tokens:read'], expiresAt: iso(T0 + 8 * day) })
    const rolled = await create({ scopes: ['tokens:read'] })
    const roll = { expires: iso(T0 + 20 * hour) }
    await call(h.app, 'POST', `/tokens/v2/alice/${rolled.id}/roll`, writer, roll)
    const bob = await h.ctx.accounts.get('bob')
    await h.ctx.tokens.create(
      bob,
      h.ctx.accounts.holder(bob),
      { scopes: ['tokens:read'], expiresAt: iso(T0 + day) },
      cliActor,
    )
    const notices = await h.ctx.hygiene.upcoming('alice')
    expect(notices.map((n) => [n.kind, n.token.id, n.at])).toEqual([
      ['retiring', rolled.id, iso(T0 + 20 * hour)],
      ['expiring', soon.id, iso(T0 + 2 * day)],
    ])
    // An sk's string is never in a notice.
    expect(notices.every((n) => n.token.token === undefined)).toBe(true)
  })
})
