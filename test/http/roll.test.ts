import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { ApiError } from '../../src/errors.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { DashboardClient } from './dashboard-client.js'

const hour = 3_600_000
const retrieve = async (h: Harness, token: string) =>
  (await call(h.app, 'GET', '/tokens/v2', token)).body.code

describe('rolling a token (POST /tokens/v2/{username}/{token_id}/roll)', () => {
  let h: Harness
  let writer: string

  beforeEach(async () => {
    h = await harness(adminEnv)
    writer = (await h.token('alice', [...all, 'styles:read', 'fonts:read'])).token
  })
  afterEach(() => h.close())

  const roll = (id: string, body?: unknown, token = writer) =>
    call(h.app, 'POST', `/tokens/v2/alice/${id}/roll`, token, body)

  it('answers a new token shaped like a create, and the old string stops at once', async () => {
    const old = await h.token('alice', ['styles:read'], {
      note: 'website',
      allowedUrls: ['https://example.com'],
    })
    h.clock.now += 1000
    const res = await roll(old.id)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      client: 'api',
      usage: 'pk',
      id: expect.stringMatching(/^c[a-z0-9]{24}$/),
      default: false,
      note: 'website',
      scopes: ['styles:read'],
      allowedUrls: ['https://example.com'],
      created: new Date(T0 + 1000).toISOString(),
      modified: new Date(T0 + 1000).toISOString(),
      token: expect.stringMatching(/^pk\./),
    })
    expect(res.body.id).not.toBe(old.id)
    expect(await retrieve(h, old.token)).toBe('TokenRevoked')
    expect(await retrieve(h, res.body.token)).toBe('TokenValid')
    const ids = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body.map(
      (t: { id: string }) => t.id,
    )
    expect(ids).not.toContain(old.id)
    expect(ids).toContain(res.body.id)
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body
    expect(events.map((e: { target: unknown; details: unknown }) => [e.target, e.details])).toEqual(
      [
        [
          { type: 'token', id: res.body.id },
          { previous: old.id, usage: 'pk', retires: new Date(T0 + 1000).toISOString() },
        ],
      ],
    )
  })

  it('keeps the old string valid until expires, then revokes it; a second roll cannot extend it', async () => {
    const old = await h.token('alice', ['styles:read', 'tokens:read'], { note: 'server' })
    const first = await roll(old.id, { expires: new Date(T0 + hour).toISOString() })
    expect(first.status).toBe(200)
    expect(first.body.usage).toBe('sk')
    expect(await retrieve(h, old.token)).toBe('TokenValid')
    // Still listed while it works (with its string hidden, as an sk).
    const listed = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    expect(listed.map((t: { id: string }) => t.id)).toEqual(
      expect.arrayContaining([old.id, first.body.id]),
    )
    // Rolled again, later: refused (a token is rolled once), and its end stays where it was.
    const second = await roll(old.id, { expires: new Date(T0 + 20 * hour).toISOString() })
    expect(second.status).toBe(409)
    h.clock.now = T0 + hour - 1
    expect(await retrieve(h, old.token)).toBe('TokenValid')
    h.clock.now = T0 + hour
    expect(await retrieve(h, old.token)).toBe('TokenRevoked')
    expect(await retrieve(h, first.body.token)).toBe('TokenValid')
    expect((await roll(old.id)).status).toBe(404)
    expect(await h.ctx.tokens.sweepRetired()).toBe(1)
    const after = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    expect(after.map((t: { id: string }) => t.id)).not.toContain(old.id)
  })

  it('makes the new token the default when the default is rolled', async () => {
    // The caller holds every scope of the default token (all the public ones).
    const holder = await h.token('alice', [...new Set([...all, ...h.alice.defaultToken.scopes])])
    const res = await roll(h.alice.defaultToken.id, undefined, holder.token)
    expect(res.status).toBe(200)
    expect(res.body.default).toBe(true)
    expect(res.body.note).toBe('Default public token')
    const list = (await call(h.app, 'GET', '/tokens/v2/alice?default=true', writer)).body
    expect(list.map((t: { id: string }) => t.id)).toEqual([res.body.id])
    expect(await retrieve(h, h.alice.defaultToken.token as string)).toBe('TokenRevoked')
  })

  it('refuses by the rules of update, and changes nothing', async () => {
    const target = await h.token('alice', ['styles:read', 'fonts:read'])
    const narrow = (await h.token('alice', ['tokens:write', 'styles:read'])).token
    const reader = (await h.token('alice', ['tokens:read', 'styles:read'])).token
    const tk = (
      await call(h.app, 'POST', '/tokens/v2/alice', writer, {
        scopes: ['tokens:write', 'styles:read', 'fonts:read'],
        expires: new Date(T0 + 60_000).toISOString(),
      })
    ).body.token
    const cases: [string, () => ReturnType<typeof roll>, number, unknown][] = [
      [
        'too far',
        () => roll(target.id, { expires: new Date(T0 + 24 * hour + 1).toISOString() }),
        422,
        { message: 'expires is more than 24 hours in the future' },
      ],
      [
        'in the past',
        () => roll(target.id, { expires: new Date(T0 - 1).toISOString() }),
        422,
        { message: 'expires is in the past' },
      ],
      [
        'not a timestamp',
        () => roll(target.id, { expires: 'soon' }),
        422,
        { message: 'resources are invalid', details: 'expires must be an ISO 8601 timestamp' },
      ],
      [
        'an unknown field',
        () => roll(target.id, { note: 'x' }),
        422,
        { message: 'resources are invalid', details: 'unknown field: note' },
      ],
      [
        'not an object',
        () => roll(target.id, [1]),
        422,
        { message: 'resources are invalid', details: 'the body must be a JSON object' },
      ],
      [
        'a scope the caller lacks',
        () => roll(target.id, undefined, narrow),
        422,
        {
          message: 'scopes are invalid',
          details: 'the authorizing token does not hold fonts:read',
        },
      ],
      [
        'a temporary token',
        () => roll(target.id, undefined, tk),
        422,
        { message: 'temporary tokens cannot be rolled' },
      ],
      [
        'without tokens:write',
        () => roll(target.id, undefined, reader),
        404,
        { message: 'Not found', details: 'the token lacks tokens:write' },
      ],
      [
        'an unknown id',
        () => roll('cabcdefghijklmnopqrstuvwxy'),
        404,
        { message: 'Not found', details: 'no token with this id in this account' },
      ],
      [
        'another account',
        () => roll(h.bob.defaultToken.id),
        404,
        { message: 'Not found', details: 'no token with this id in this account' },
      ],
    ]
    for (const [name, request, status, body] of cases) {
      const res = await request()
      expect([res.status, res.body], name).toEqual([status, body])
    }
    expect(await retrieve(h, target.token)).toBe('TokenValid')
    expect((await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body).toEqual(
      [],
    )
  })

  it('rolls through the admin API too', async () => {
    const old = await h.token('alice', ['styles:read'])
    const res = await admin(h.app, 'POST', `/accounts/alice/tokens/${old.id}/roll`, {
      expires: new Date(T0 + hour).toISOString(),
    })
    expect(res.status).toBe(200)
    expect(res.body.token).toMatch(/^pk\./)
    expect(await retrieve(h, old.token)).toBe('TokenValid')
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body
    expect(events[0].actor).toEqual({ type: 'admin', id: 'k1' })
  })

  /** The 409 of a token rolled already, whose old string works until `end`. */
  const rolledAlready = (end: number) => ({
    message: 'the token was rolled already',
    details: `it works until ${new Date(end).toISOString()}, then ends: roll the token that replaced it`,
  })
  const rolledEvents = async () =>
    (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body as {
      target: { id: string }
      details: { previous: string }
    }[]

  it('refuses to roll a retiring token again (409): one successor, one token.rolled event', async () => {
    const w = await h.token('alice', ['styles:read', 'tokens:read'], { note: 'server' })
    const first = await roll(w.id, { expires: new Date(T0 + hour).toISOString() })
    expect(first.status).toBe(200)
    // The API, with a grace period or without; the admin API; the CLI's and dashboard's service.
    for (const res of [
      await roll(w.id, { expires: new Date(T0 + 2 * hour).toISOString() }),
      await roll(w.id),
      await admin(h.app, 'POST', `/accounts/alice/tokens/${w.id}/roll`, {}),
    ]) {
      expect([res.status, res.body]).toEqual([409, rolledAlready(T0 + hour)])
    }
    const holder = h.ctx.accounts.holder(h.alice)
    const refused = await h.ctx.tokens.roll(h.alice, holder, w.id, {}, cliActor).catch((e) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect([refused.statusCode, refused.toJSON()]).toEqual([409, rolledAlready(T0 + hour)])
    // One live successor, and the old string still ends when it did.
    const servers = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body.filter(
      (t: { note: string }) => t.note === 'server',
    )
    expect(servers.map((t: { id: string }) => t.id).sort()).toEqual([w.id, first.body.id].sort())
    expect((await rolledEvents()).map((e) => [e.target.id, e.details.previous])).toEqual([
      [first.body.id, w.id],
    ])
    h.clock.now = T0 + hour
    expect(await retrieve(h, w.token)).toBe('TokenRevoked')
    expect(await retrieve(h, first.body.token)).toBe('TokenValid')
  })

  it('refuses the retiring string (403) when it rolls, updates or deletes the token that replaced it', async () => {
    // The attacker holds W's string: W is rolled with a grace period so that apps can move.
    const w = await h.token('alice', [...all, 'styles:read', 'fonts:read'], { note: 'deploy' })
    const w2 = (await roll(w.id, { expires: new Date(T0 + hour).toISOString() })).body
    const retiring = {
      message: 'a retiring token cannot change the token that replaced it',
      details: `the authorizing token was rolled and works until ${new Date(T0 + hour).toISOString()}: use the token that replaced it`,
    }
    const attempts = () => [
      call(h.app, 'POST', `/tokens/v2/alice/${w2.id}/roll`, w.token),
      call(h.app, 'POST', `/tokens/v2/alice/${w2.id}/roll`, w.token, {
        expires: new Date(T0 + 60_000).toISOString(),
      }),
      call(h.app, 'PATCH', `/tokens/v2/alice/${w2.id}`, w.token, { scopes: ['styles:read'] }),
      call(h.app, 'PATCH', `/tokens/v2/alice/${w2.id}`, w.token, { allowedIps: ['192.0.2.1'] }),
      call(h.app, 'DELETE', `/tokens/v2/alice/${w2.id}`, w.token),
    ]
    for (const res of await Promise.all(attempts())) {
      expect([res.status, res.body]).toEqual([403, retiring])
    }
    // W2 rolled in turn (by its holder): W's string is refused on W3 too, the rest of its line.
    const w3 = (await roll(w2.id, { expires: new Date(T0 + 30 * 60_000).toISOString() }, w2.token))
      .body
    for (const res of [
      await call(h.app, 'DELETE', `/tokens/v2/alice/${w3.id}`, w.token),
      await call(h.app, 'PATCH', `/tokens/v2/alice/${w3.id}`, w.token, { note: 'mine' }),
    ]) {
      expect([res.status, res.body]).toEqual([403, retiring])
    }
    // The successors work, unchanged, and nothing was recorded for them.
    expect(await retrieve(h, w2.token)).toBe('TokenValid')
    expect(await retrieve(h, w3.token)).toBe('TokenValid')
    const listed = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    const view = listed.find((t: { id: string }) => t.id === w3.id)
    expect([view.note, view.scopes, view.allowedIps]).toEqual(['deploy', w.scopes, undefined])
    const changed = (await admin(h.app, 'GET', '/accounts/alice/audit')).body.filter(
      (e: { action: string; target: { id?: string } }) =>
        ['token.updated', 'token.deleted'].includes(e.action),
    )
    expect(changed).toEqual([])
    expect((await rolledEvents()).length).toBe(2)
    // What it may still do: its own work, and end itself early.
    expect((await call(h.app, 'GET', '/tokens/v2/alice', w.token)).status).toBe(200)
    expect((await call(h.app, 'DELETE', `/tokens/v2/alice/${w.id}`, w.token)).status).toBe(204)
    expect(await retrieve(h, w.token)).toBe('TokenRevoked')
    expect(await retrieve(h, w3.token)).toBe('TokenValid')
  })

  it('refuses the retiring string a temporary token with tokens:write, the way around that', async () => {
    const w = await h.token('alice', [...all, 'styles:read'], { note: 'deploy' })
    const w2 = (await roll(w.id, { expires: new Date(T0 + hour).toISOString() })).body
    const expires = new Date(T0 + 30 * 60_000).toISOString()
    const minted = await call(h.app, 'POST', '/tokens/v2/alice', w.token, {
      expires,
      scopes: ['tokens:write', 'tokens:read'],
    })
    expect([minted.status, minted.body]).toEqual([
      422,
      {
        message: 'scopes are invalid',
        details: 'a rolled token cannot give tokens:write to a temporary token',
      },
    ])
    // Its own work still gets temporary tokens: reading, and what its apps use.
    const reader = await call(h.app, 'POST', '/tokens/v2/alice', w.token, {
      expires,
      scopes: ['tokens:read', 'styles:read'],
    })
    expect(reader.status).toBe(200)
    const patch = await call(h.app, 'PATCH', `/tokens/v2/alice/${w2.id}`, reader.body.token, {
      note: 'mine',
    })
    // Without tokens:write: the contract's 404 for a token that lacks the endpoint's scope.
    expect([patch.status, patch.body.message]).toEqual([404, 'Not found'])
    expect(await retrieve(h, w2.token)).toBe('TokenValid')
  })

  it('ends a temporary token made by the retiring string no later than its grace', async () => {
    const w = await h.token('alice', [...all, 'styles:read'])
    // Validated before the roll: a principal cached from then must not keep the old end.
    expect(await retrieve(h, w.token)).toBe('TokenValid')
    await roll(w.id, { expires: new Date(T0 + 10 * 60_000).toISOString() })
    const mint = (minutes: number) =>
      call(h.app, 'POST', '/tokens/v2/alice', w.token, {
        expires: new Date(T0 + minutes * 60_000).toISOString(),
        scopes: ['styles:read'],
      })
    // A tk is never looked up: one outliving the grace would keep the rolled string's access.
    const late = await mint(30)
    expect([late.status, late.body]).toEqual([
      422,
      { message: 'expires may not be greater than the expiration of the authorizing token' },
    ])
    const atEnd = await mint(10)
    expect(atEnd.status).toBe(200)
    h.clock.now = T0 + 10 * 60_000 - 1000
    expect(await retrieve(h, atEnd.body.token)).toBe('TokenValid')
    h.clock.now = T0 + 10 * 60_000
    expect(await retrieve(h, atEnd.body.token)).toBe('TokenExpired')
    expect(await retrieve(h, w.token)).toBe('TokenRevoked')
  })

  it('lets exactly one of two concurrent rolls of a token succeed', async () => {
    const graced = await h.token('alice', ['styles:read'], { note: 'graced' })
    const expires = new Date(T0 + hour).toISOString()
    const both = await Promise.all([roll(graced.id, { expires }), roll(graced.id, { expires })])
    expect(both.map((r) => r.status).sort()).toEqual([200, 409])
    expect(both.find((r) => r.status === 409)?.body).toEqual(rolledAlready(T0 + hour))
    // At once: the loser finds the token gone (404) or retiring (409); never a second success.
    const now = await h.token('alice', ['styles:read'], { note: 'now' })
    const many = await Promise.all([roll(now.id), roll(now.id), roll(now.id)])
    expect(many.filter((r) => r.status === 200)).toHaveLength(1)
    for (const r of many.filter((r) => r.status !== 200)) {
      expect([r.status, r.body]).toEqual([
        404,
        { message: 'Not found', details: 'no token with this id in this account' },
      ])
    }
    // In the service itself (the CLI, the dashboard, a leak report), past the route.
    const svc = await h.token('alice', ['styles:read'], { note: 'service' })
    const holder = h.ctx.accounts.holder(h.alice)
    const results = await Promise.allSettled(
      [1, 2, 3].map(() => h.ctx.tokens.roll(h.alice, holder, svc.id, { expires }, cliActor)),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    for (const r of results.filter((r) => r.status === 'rejected')) {
      expect((r as PromiseRejectedResult).reason.toJSON()).toEqual(rolledAlready(T0 + hour))
    }
    const byOld = (await rolledEvents()).map((e) => e.details.previous)
    expect(byOld.sort()).toEqual([graced.id, now.id, svc.id].sort())
    const notes = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body.map(
      (t: { note: string }) => t.note,
    )
    expect(notes.filter((n: string) => n === 'graced')).toHaveLength(2)
    expect(notes.filter((n: string) => n === 'now')).toHaveLength(1)
    expect(notes.filter((n: string) => n === 'service')).toHaveLength(2)
  })

  it("offers no roll on a retiring token's page, and answers a roll of it with 409", async () => {
    const w = await h.token('alice', ['styles:read'], { note: 'site' })
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite('alice', cliActor)
    const password = 'correct horse battery staple'
    await b.post(`/account/setup/${link}`, { password, confirm: password })
    expect((await b.get(`/account/tokens/${w.id}`)).body).toContain('Roll this token')
    expect((await b.post(`/account/tokens/${w.id}/roll`, { when: '1h' })).status).toBe(200)
    const page = await b.get(`/account/tokens/${w.id}`)
    expect(page.body).toContain(
      'This token was rolled: it works until <time datetime="2026-11-22T13:00:00.000Z">2026-11-22 <span class="clock">13:00 UTC</span></time>, then ends. Roll or change the token that replaced it.',
    )
    expect(page.body).not.toContain(`action="/account/tokens/${w.id}/roll"`)
    // A form kept open in another tab.
    const again = await b.post(`/account/tokens/${w.id}/roll`, { when: 'now' })
    expect(again.status).toBe(409)
    expect(again.body).toContain('<strong>the token was rolled already</strong>')
    expect(await retrieve(h, w.token)).toBe('TokenValid')
    expect(await rolledEvents()).toHaveLength(1)
  })
})
