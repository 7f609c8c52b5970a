import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Tessera's `ratelimits` on a pk or sk: its own named limits, an extension field like
 * `expiresAt` (in the token object only when set), applied on top of its account's to every
 * verification of the token (docs/ratelimits.md).
 */
let h: Harness
afterEach(() => h.close())

const burst = { name: 'burst', limit: 2, duration: 1000 }
const daily = { name: 'daily', limit: 1000, duration: 86_400_000, cost: 2 }

describe('a token carries its own rate limits (ratelimits)', () => {
  const create = (body: Record<string, unknown>, token: string) =>
    call(h.app, 'POST', '/tokens/v2/alice', token, body)
  const listed = async (token: string, id: string) =>
    (await call(h.app, 'GET', '/tokens/v2/alice', token)).body.find(
      (t: { id: string }) => t.id === id,
    )

  it('shows them on create, list, update, roll and the admin listing only when set', async () => {
    h = await harness(adminEnv)
    const writer = (await h.token('alice', [...all, 'styles:read'])).token
    const res = await create({ scopes: ['styles:read'], ratelimits: [burst, daily] }, writer)
    expect(res.status).toBe(200)
    expect(res.body.ratelimits).toEqual([burst, daily])
    const plain = await create({ scopes: ['styles:read'] }, writer)
    expect(plain.body).not.toHaveProperty('ratelimits')
    // The same fields in the same order, ratelimits last but the token: nothing new otherwise.
    expect(Object.keys(res.body)).toEqual([
      ...Object.keys(plain.body).filter((k) => k !== 'token'),
      'ratelimits',
      'token',
    ])
    expect(await listed(writer, res.body.id)).toMatchObject({ ratelimits: [burst, daily] })
    expect(await listed(writer, plain.body.id)).not.toHaveProperty('ratelimits')
    expect((await h.ctx.tokens.get(h.alice, res.body.id)).ratelimits).toEqual([burst, daily])

    const path = `/tokens/v2/alice/${plain.body.id}`
    const patch = (body: unknown) => call(h.app, 'PATCH', path, writer, body)
    const set = await patch({ ratelimits: [daily] })
    expect([set.status, set.body.ratelimits]).toEqual([200, [daily]])
    // Absent: kept.
    expect((await patch({ note: 'n' })).body.ratelimits).toEqual([daily])
    expect(await listed(writer, plain.body.id)).toMatchObject({ note: 'n', ratelimits: [daily] })
    // [] and null: removed.
    const emptied = await patch({ ratelimits: [] })
    expect(emptied.status).toBe(200)
    expect(emptied.body).not.toHaveProperty('ratelimits')
    expect(await listed(writer, plain.body.id)).not.toHaveProperty('ratelimits')
    expect((await patch({ ratelimits: [burst] })).body.ratelimits).toEqual([burst])
    const removed = await patch({ ratelimits: null })
    expect(removed.status).toBe(200)
    expect(removed.body).not.toHaveProperty('ratelimits')
    expect(await listed(writer, plain.body.id)).not.toHaveProperty('ratelimits')
    // An empty list on create is none.
    const none = await create({ scopes: ['styles:read'], ratelimits: [] }, writer)
    expect(none.status).toBe(200)
    expect(none.body).not.toHaveProperty('ratelimits')

    // Audited as a change of the field.
    const events = await admin(h.app, 'GET', '/accounts/alice/audit?action=token.updated')
    expect(events.body.map((e: { details: unknown }) => e.details)).toContainEqual({
      fields: ['ratelimits'],
    })

    // A roll keeps them: they bound the token whichever string is used.
    const rolled = await call(h.app, 'POST', `/tokens/v2/alice/${res.body.id}/roll`, writer)
    expect([rolled.status, rolled.body.ratelimits]).toEqual([200, [burst, daily]])
    const adminList = (await admin(h.app, 'GET', '/accounts/alice/tokens')).body
    const byId = (id: string) => adminList.find((t: { id: string }) => t.id === id)
    expect(byId(rolled.body.id).ratelimits).toEqual([burst, daily])
    expect(byId(plain.body.id)).not.toHaveProperty('ratelimits')
  })

  it('stops a pk at its own limit on retrieve; a refused request consumes none', async () => {
    // The account's `requests`: 4 a minute, so that what the refusal did not take shows.
    h = await harness({ RATE_LIMIT_PER_MINUTE: '4' })
    const holder = h.ctx.accounts.holder(h.alice)
    const input = { scopes: ['styles:read'], ratelimits: [burst] }
    const pk = await h.ctx.tokens.create(h.alice, holder, input, cliActor)
    expect(pk.usage).toBe('pk')
    const retrieve = () => call(h.app, 'GET', '/tokens/v2', pk.token)
    const limits = (res: { headers: Record<string, unknown> }) => ({
      interval: res.headers['x-rate-limit-interval'],
      limit: res.headers['x-rate-limit-limit'],
      reset: res.headers['x-rate-limit-reset'],
      policy: res.headers['ratelimit-policy'],
      remaining: res.headers.ratelimit,
      retry: res.headers['retry-after'],
    })
    // Mapbox's headers describe the account's `requests`; the IETF ones the limit nearest.
    const requests = { interval: '60', limit: '4', reset: String((T0 + 60_000) / 1000) }
    const first = await retrieve()
    expect(first.body.code).toBe('TokenValid')
    expect(limits(first)).toEqual({
      ...requests,
      policy: '"burst";q=2;w=1',
      remaining: '"burst";r=1;t=1',
      retry: undefined,
    })
    const second = await retrieve()
    expect([second.status, limits(second).remaining]).toEqual([200, '"burst";r=0;t=1'])
    const third = await retrieve()
    expect([third.status, third.body]).toEqual([429, { message: 'Too Many Requests' }])
    expect(limits(third)).toEqual({
      ...requests,
      policy: '"burst";q=2;w=1',
      remaining: '"burst";r=0;t=1',
      retry: '1',
    })

    // A second on: the burst passes again. The account's `requests` has 1 left of 4: the
    // refused request took none of it (it would have none left, and be the nearest anyway).
    h.clock.now += 1000
    const fourth = await retrieve()
    expect([fourth.status, fourth.body.code]).toEqual([200, 'TokenValid'])
    expect(limits(fourth)).toEqual({
      ...requests,
      policy: '"requests";q=4;w=60',
      remaining: '"requests";r=1;t=59',
      retry: undefined,
    })
    // Another token of the account: not bound by the burst, only by the account's `requests`.
    const other = await h.ctx.tokens.create(h.alice, holder, { scopes: [] }, cliActor)
    const passes = await call(h.app, 'GET', '/tokens/v2', other.token)
    expect([passes.status, limits(passes).remaining]).toEqual([200, '"requests";r=0;t=59'])
    expect((await call(h.app, 'GET', '/tokens/v2', other.token)).status).toBe(429)

    await h.ctx.usage.flush()
    const range = { from: T0 - 3_600_000, to: h.clock.now + 60_000, token: pk.id }
    expect(await h.ctx.usage.totals('alice', range)).toEqual({ valid: 3, rate_limited: 1 })
  })

  it("stops an sk at its own limit in the token API (the guard); others' tokens go on", async () => {
    h = await harness()
    const holder = h.ctx.accounts.holder(h.alice)
    const input = { scopes: ['tokens:read'], ratelimits: [burst] }
    const sk = await h.ctx.tokens.create(h.alice, holder, input, cliActor)
    expect(sk.usage).toBe('sk')
    const list = () => call(h.app, 'GET', '/tokens/v2/alice', sk.token)
    const first = await list()
    expect([first.status, first.headers['ratelimit-policy'], first.headers.ratelimit]).toEqual([
      200,
      '"burst";q=2;w=1',
      '"burst";r=1;t=1',
    ])
    expect((await list()).status).toBe(200)
    const refused = await list()
    expect([refused.status, refused.body]).toEqual([429, { message: 'Too Many Requests' }])
    expect(refused.headers).toMatchObject({
      'x-rate-limit-interval': '60',
      'x-rate-limit-limit': '100000',
      'ratelimit-policy': '"burst";q=2;w=1',
      ratelimit: '"burst";r=0;t=1',
      'retry-after': '1',
    })
    // Refused before the route: a create by it would make nothing.
    const writer = await h.ctx.tokens.create(
      h.alice,
      holder,
      { scopes: all, ratelimits: [{ name: 'burst', limit: 1, duration: 60_000 }] },
      cliActor,
    )
    const made = () => call(h.app, 'POST', '/tokens/v2/alice', writer.token, { scopes: [] })
    expect((await made()).status).toBe(200)
    expect((await made()).status).toBe(429)
    const count = (await h.ctx.tokens.list(h.alice, { limit: 100, sortby: 'created' })).body
    expect(JSON.parse(count)).toHaveLength(4)
    // The default token of the account has no limits of its own.
    expect((await call(h.app, 'GET', '/tokens/v2', h.alice.defaultToken.token)).status).toBe(200)

    h.clock.now += 1000
    expect((await list()).status).toBe(200)
  })
})
