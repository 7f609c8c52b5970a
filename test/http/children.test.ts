import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

const day = 86_400_000
const iso = (ms: number) => new Date(ms).toISOString()
const retrieve = async (h: Harness, token: string) =>
  (await call(h.app, 'GET', '/tokens/v2', token)).body.code

describe('child tokens (POST /tokens/v2/{username}/{token_id}/children)', () => {
  let h: Harness
  let writer: string

  beforeEach(async () => {
    h = await harness(adminEnv)
    writer = (await h.token('alice', [...all, 'styles:read', 'fonts:read'])).token
  })
  afterEach(() => h.close())

  const child = (parent: string, body: unknown, token = writer) =>
    call(h.app, 'POST', `/tokens/v2/alice/${parent}/children`, token, body)

  /** A parent sk with every bound a child can inherit. */
  const bounded = () =>
    h.ctx.tokens.create(
      h.alice,
      h.ctx.accounts.holder(h.alice),
      {
        note: 'agent root',
        scopes: ['styles:read', 'fonts:read', 'tokens:read'],
        allowedUrls: ['https://*.example.com/maps'],
        allowedIps: ['10.0.0.0/16'],
        expiresAt: iso(T0 + 30 * day),
        ratelimits: [{ name: 'requests', limit: 50, duration: 60_000 }],
      },
      { type: 'cli' },
    )

  it('answers the child with its parent and inherits every bound it does not narrow', async () => {
    const parent = await bounded()
    const res = await child(parent.id, { note: 'agent', scopes: ['styles:read'] })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      id: expect.stringMatching(/^c[a-z0-9]{24}$/),
      usage: 'pk',
      client: 'api',
      default: false,
      scopes: ['styles:read'],
      note: 'agent',
      created: iso(T0),
      modified: iso(T0),
      allowedUrls: ['https://*.example.com/maps'],
      allowedIps: ['10.0.0.0/16'],
      expiresAt: iso(T0 + 30 * day),
      ratelimits: [{ name: 'requests', limit: 50, duration: 60_000 }],
      parent: parent.id,
      token: expect.stringMatching(/^pk\./),
    })
    expect(await retrieve(h, res.body.token)).toBe('TokenValid')
    const listed = await call(h.app, 'GET', `/tokens/v2/alice?parent=${parent.id}`, writer)
    expect(listed.status).toBe(200)
    expect(listed.body).toEqual([res.body])
    const none = await call(h.app, 'GET', `/tokens/v2/alice?parent=${res.body.id}`, writer)
    expect(none.body).toEqual([])
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.created')).body
    expect(events[0].details).toEqual({
      usage: 'pk',
      scopes: ['styles:read'],
      parent: parent.id,
      chain: [parent.id],
    })
  })

  it('narrows every bound it is given within the parent', async () => {
    const parent = await bounded()
    const res = await child(parent.id, {
      note: 'narrow',
      scopes: ['tokens:read'],
      allowedUrls: ['https://maps.example.com/maps/v1', 'https://b.example.com:443/maps/'],
      allowedIps: ['10.0.3.0/24', '10.0.0.7'],
      expiresAt: iso(T0 + day),
      ratelimits: [
        { name: 'requests', limit: 10, duration: 120_000 },
        { name: 'burst', limit: 5, duration: 1000 },
      ],
    })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      usage: 'sk',
      scopes: ['tokens:read'],
      allowedUrls: ['https://maps.example.com/maps/v1', 'https://b.example.com:443/maps/'],
      allowedIps: ['10.0.3.0/24', '10.0.0.7'],
      expiresAt: iso(T0 + day),
      ratelimits: [
        { name: 'requests', limit: 10, duration: 120_000 },
        { name: 'burst', limit: 5, duration: 1000 },
      ],
    })
  })

  it.each([
    [
      { scopes: ['tokens:write'] },
      'scopes are invalid',
      'the parent token does not hold tokens:write',
    ],
    [
      { allowedUrls: ['https://example.com/maps'] },
      'resources are invalid',
      "https://example.com/maps is outside the parent token's allowedUrls",
    ],
    [
      { allowedUrls: ['https://a.example.com/tiles'] },
      'resources are invalid',
      "https://a.example.com/tiles is outside the parent token's allowedUrls",
    ],
    [
      { allowedUrls: ['http://a.example.com/maps'] },
      'resources are invalid',
      "http://a.example.com/maps is outside the parent token's allowedUrls",
    ],
    [
      { allowedUrls: ['https://a.example.com:8443/maps'] },
      'resources are invalid',
      "https://a.example.com:8443/maps is outside the parent token's allowedUrls",
    ],
    [
      { allowedUrls: ['https://a.example.com/mapsx'] },
      'resources are invalid',
      "https://a.example.com/mapsx is outside the parent token's allowedUrls",
    ],
    [
      { allowedUrls: ['https://a.example.com/maps/../admin'] },
      'resources are invalid',
      "https://a.example.com/maps/../admin is outside the parent token's allowedUrls",
    ],
    [
      { allowedUrls: ['https://a.example.com/maps/%2e%2e/admin'] },
      'resources are invalid',
      "https://a.example.com/maps/%2e%2e/admin is outside the parent token's allowedUrls",
    ],
    [
      { allowedUrls: ['a.example.com/maps'] },
      'resources are invalid',
      "a.example.com/maps is outside the parent token's allowedUrls",
    ],
    [
      { allowedIps: ['10.0.0.0/8'] },
      'resources are invalid',
      "10.0.0.0/8 is outside the parent token's allowedIps",
    ],
    [
      { allowedIps: ['10.1.0.1'] },
      'resources are invalid',
      "10.1.0.1 is outside the parent token's allowedIps",
    ],
    [
      { expiresAt: iso(T0 + 31 * day) },
      'resources are invalid',
      `expiresAt may be no later than the parent token's, ${iso(T0 + 30 * day)}`,
    ],
    [
      { ratelimits: [{ name: 'requests', limit: 51, duration: 60_000 }] },
      'resources are invalid',
      "the rate limit requests may be no looser than the parent token's",
    ],
    [
      { ratelimits: [{ name: 'requests', limit: 50, duration: 30_000 }] },
      'resources are invalid',
      "the rate limit requests may be no looser than the parent token's",
    ],
    [
      { ratelimits: [{ name: 'requests', limit: 50, duration: 60_000, cost: 0 }] },
      'resources are invalid',
      "the rate limit requests may be no looser than the parent token's",
    ],
  ])(
    'refuses a child wider than its parent (%j), and makes nothing',
    async (body, message, details) => {
      const parent = await bounded()
      const res = await child(parent.id, { scopes: ['styles:read'], ...body })
      expect(res.status).toBe(422)
      expect(res.body).toEqual({ message, details })
      const listed = await call(h.app, 'GET', `/tokens/v2/alice?parent=${parent.id}`, writer)
      expect(listed.body).toEqual([])
    },
  )

  it('holds a grandchild to every ancestor and refuses a fifth level', async () => {
    const parent = await bounded()
    let id = parent.id
    const ids: string[] = []
    for (let level = 1; level <= 4; level++) {
      const res = await child(id, { scopes: ['styles:read', 'fonts:read'], note: `level ${level}` })
      expect(res.status).toBe(200)
      expect(res.body.parent).toBe(id)
      id = res.body.id
      ids.push(id)
    }
    const fifth = await child(id, { scopes: ['styles:read'] })
    expect(fifth.status).toBe(422)
    expect(fifth.body).toEqual({
      message: 'resources are invalid',
      details: 'a token may have at most 4 levels of children; this one is 4 below the first',
    })
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.created')).body
    expect(events[0].details.chain).toEqual([parent.id, ...ids.slice(0, 3)])
  })

  it('ends every descendant when a parent is deleted, and records the chain', async () => {
    const parent = await bounded()
    const a = await child(parent.id, { scopes: ['styles:read'] })
    const b = await child(a.body.id, { scopes: ['styles:read'] })
    const c = await child(b.body.id, { scopes: ['styles:read'] })
    const sibling = await child(parent.id, { scopes: ['fonts:read'] })
    for (const t of [a, b, c, sibling]) expect(await retrieve(h, t.body.token)).toBe('TokenValid')
    const gone = await call(h.app, 'DELETE', `/tokens/v2/alice/${a.body.id}`, writer)
    expect(gone.status).toBe(204)
    expect(await retrieve(h, a.body.token)).toBe('TokenRevoked')
    expect(await retrieve(h, b.body.token)).toBe('TokenRevoked')
    expect(await retrieve(h, c.body.token)).toBe('TokenRevoked')
    expect(await retrieve(h, sibling.body.token)).toBe('TokenValid')
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.deleted')).body
    // Newest first, as the audit log lists.
    expect(
      events
        .map((e: { target: { id: string }; details: unknown }) => [e.target.id, e.details])
        .reverse(),
    ).toEqual([
      [a.body.id, { usage: 'pk' }],
      [b.body.id, { usage: 'pk', reason: 'parent', cause: 'deleted', chain: [a.body.id] }],
      [
        c.body.id,
        { usage: 'pk', reason: 'parent', cause: 'deleted', chain: [a.body.id, b.body.id] },
      ],
    ])
  })

  it('ends the family of a parent revoked as leaked, each deletion in the events verifiers follow', async () => {
    const parent = await bounded()
    const kid = await child(parent.id, { scopes: ['styles:read'] })
    const parentToken = parent.token
    const res = await admin(h.app, 'POST', '/leaks', { tokens: [parentToken] })
    expect(res.status).toBe(200)
    expect(await retrieve(h, parentToken as string)).toBe('TokenRevoked')
    expect(await retrieve(h, kid.body.token)).toBe('TokenRevoked')
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.deleted')).body
    expect(
      events
        .map((e: { target: { id: string }; details: unknown }) => [e.target.id, e.details])
        .reverse(),
    ).toEqual([
      [parent.id, { usage: 'sk', reason: 'leaked' }],
      [kid.body.id, { usage: 'pk', reason: 'parent', cause: 'leaked', chain: [parent.id] }],
    ])
  })

  it('moves the children to the token that replaced a rolled parent; ends them when asked', async () => {
    const parent = await bounded()
    const kept = await child(parent.id, { scopes: ['styles:read'] })
    const rolled = await call(h.app, 'POST', `/tokens/v2/alice/${parent.id}/roll`, writer)
    expect(rolled.status).toBe(200)
    expect(await retrieve(h, kept.body.token)).toBe('TokenValid')
    const listed = await call(h.app, 'GET', `/tokens/v2/alice?parent=${rolled.body.id}`, writer)
    expect(listed.body.map((t: { id: string; parent: string }) => [t.id, t.parent])).toEqual([
      [kept.body.id, rolled.body.id],
    ])
    const again = await call(h.app, 'POST', `/tokens/v2/alice/${rolled.body.id}/roll`, writer, {
      children: 'end',
    })
    expect(again.status).toBe(200)
    expect(await retrieve(h, kept.body.token)).toBe('TokenRevoked')
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body
    expect(
      events.map((e: { details: { moved?: string[]; ended?: string[] } }) => e.details).reverse(),
    ).toEqual([
      { previous: parent.id, usage: 'sk', retires: iso(T0), moved: [kept.body.id] },
      { previous: rolled.body.id, usage: 'sk', retires: iso(T0), ended: [kept.body.id] },
    ])
    const bad = await call(h.app, 'POST', `/tokens/v2/alice/${again.body.id}/roll`, writer, {
      children: 'keep',
    })
    expect(bad.status).toBe(422)
  })

  it("narrows the children's ends with their parent's, and refuses narrowing it below a child", async () => {
    const parent = await bounded()
    const kid = await child(parent.id, { scopes: ['styles:read', 'fonts:read'] })
    const grandkid = await child(kid.body.id, { scopes: ['styles:read'] })
    const sooner = iso(T0 + day)
    const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${parent.id}`, writer, {
      expiresAt: sooner,
    })
    expect(res.status).toBe(200)
    for (const t of [kid, grandkid]) {
      const listed = await call(h.app, 'GET', `/tokens/v2/alice?parent=${t.body.parent}`, writer)
      expect(listed.body[0].expiresAt).toBe(sooner)
    }
    h.clock.now = T0 + day
    expect(await retrieve(h, grandkid.body.token)).toBe('TokenExpired')
    h.clock.now = T0
    const narrower = await call(h.app, 'PATCH', `/tokens/v2/alice/${parent.id}`, writer, {
      scopes: ['styles:read'],
    })
    expect(narrower.status).toBe(422)
    expect(narrower.body).toEqual({
      message: 'scopes are invalid',
      details: `its child token ${kid.body.id} would be wider: this token does not hold fonts:read; change or delete the child first`,
    })
    const wider = await call(h.app, 'PATCH', `/tokens/v2/alice/${kid.body.id}`, writer, {
      allowedUrls: null,
    })
    expect(wider.status).toBe(422)
    expect(wider.body.details).toBe('the parent token is restricted to allowedUrls')
  })

  it("carves the child's credits out of its parent's and gives back what is left", async () => {
    const parent = await bounded()
    const set = await admin(h.app, 'PUT', `/accounts/alice/tokens/${parent.id}/credits`, {
      remaining: 100,
    })
    expect(set.status).toBe(200)
    const without = await child(parent.id, { scopes: ['styles:read'] })
    expect(without.status).toBe(422)
    expect(without.body.details).toBe(
      'the parent token has credits (100 left): give the child a part of them with credits',
    )
    const tooMany = await child(parent.id, { scopes: ['styles:read'], credits: 101 })
    expect(tooMany.body.details).toBe('the parent token has 100 credits left')
    const kid = await child(parent.id, { scopes: ['styles:read'], credits: 40 })
    expect(kid.status).toBe(200)
    const credits = async (id: string) =>
      (await admin(h.app, 'GET', `/accounts/alice/tokens/${id}/credits`)).body.remaining
    expect(await credits(parent.id)).toBe(60)
    expect(await credits(kid.body.id)).toBe(40)
    await admin(h.app, 'POST', `/accounts/alice/tokens/${kid.body.id}/credits/decrement`, {
      amount: 15,
    })
    expect((await call(h.app, 'DELETE', `/tokens/v2/alice/${kid.body.id}`, writer)).status).toBe(
      204,
    )
    expect(await credits(parent.id)).toBe(85)
  })

  it('refuses to carve from a refilling balance: carved credits would be banked each period', async () => {
    const parent = await bounded()
    await admin(h.app, 'PUT', `/accounts/alice/tokens/${parent.id}/credits`, {
      remaining: 100,
      refill: { interval: 'daily', amount: 100 },
    })
    const res = await child(parent.id, { scopes: ['styles:read'], credits: 10 })
    expect(res.status).toBe(422)
    expect(res.body.details).toBe(
      "the parent token's credits refill: a child's credits are carved from a balance without refill",
    )
  })

  it('refuses a parent in another account, a pk or tk authorizer, and a rolled parent', async () => {
    const parent = await bounded()
    const bobs = (await h.token('bob', [...all, 'styles:read'])).token
    const foreign = await call(h.app, 'POST', `/tokens/v2/bob/${parent.id}/children`, bobs, {
      scopes: ['styles:read'],
    })
    expect(foreign.status).toBe(404)
    expect(foreign.body).toEqual({
      message: 'Not found',
      details: 'no token with this id in this account',
    })
    const cross = await child(parent.id, { scopes: ['styles:read'] }, bobs)
    expect(cross.status).toBe(404)
    const pk = h.alice.defaultToken.token as string
    expect((await child(parent.id, { scopes: ['styles:read'] }, pk)).status).toBe(404)
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', writer, {
      expires: iso(T0 + 60_000),
      scopes: ['tokens:write', 'styles:read'],
    })
    expect((await child(parent.id, { scopes: ['styles:read'] }, tk.body.token)).status).toBe(404)
    await call(h.app, 'POST', `/tokens/v2/alice/${parent.id}/roll`, writer, {
      expires: iso(T0 + 60_000),
    })
    const retiring = await child(parent.id, { scopes: ['styles:read'] })
    expect(retiring.status).toBe(409)
    const listed = await call(h.app, 'GET', '/tokens/v2/alice', writer)
    expect(listed.body.filter((t: { parent?: string }) => t.parent !== undefined)).toEqual([])
  })
})
