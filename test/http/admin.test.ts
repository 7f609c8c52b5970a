import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * The operator's admin API: accounts (create, read, list, change, disable and enable, delete,
 * setup links), their tokens with last use and hourly usage, and the audit log.
 */

let h: Harness
beforeEach(async () => {
  h = await harness(adminEnv)
})
afterEach(() => h.close())

const iso = (ms: number) => new Date(ms).toISOString()
const hour = 3_600_000
const retrieve = async (token: string) =>
  (await call(h.app, 'GET', `/tokens/v2?access_token=${token}`)).body.code as string
const origin = 'https://127.0.0.1:8443'
const setupLink = /^https:\/\/127\.0\.0\.1:8443\/account\/setup\/([A-Za-z0-9_-]{43})$/
const page = async (url: string) => (await h.app.inject({ method: 'GET', url })).statusCode
const standardPublic = ['styles:tiles', 'styles:read', 'fonts:read', 'datasets:read', 'vision:read']

describe('creating accounts', () => {
  it('answers 201 with the account, its default token and a setup link that works', async () => {
    const res = await admin(h.app, 'POST', '/accounts', {
      username: 'carol',
      plan: 'pro',
      features: ['navigation', 'navigation'],
      unknown: 'ignored',
    })
    expect(res.status).toBe(201)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.body).toEqual({
      username: 'carol',
      plan: 'pro',
      features: ['navigation'],
      created: iso(T0),
      disabled: false,
      defaultToken: {
        id: expect.stringMatching(/^c[a-z0-9]{24}$/),
        usage: 'pk',
        client: 'api',
        default: true,
        scopes: [...standardPublic, 'navigation:read'],
        note: 'Default public token',
        created: iso(T0),
        modified: iso(T0),
        token: expect.stringMatching(/^pk\./),
      },
      setupUrl: expect.stringMatching(setupLink),
    })
    expect(await retrieve(res.body.defaultToken.token)).toBe('TokenValid')
    const link = setupLink.exec(res.body.setupUrl)?.[1]
    expect(await page(`/account/setup/${link}`)).toBe(200)
    const events = await h.ctx.audit.list({ username: 'carol', limit: 10 })
    expect(events.map((e) => [e.action, e.actor])).toEqual([
      ['account.invited', { type: 'admin', id: 'k1' }],
      ['account.created', { type: 'admin', id: 'k1' }],
    ])
    expect(events[1]).toMatchObject({ address: '127.0.0.1', requestId: expect.any(String) })
  })

  it('takes the default plan when none is named', async () => {
    const res = await admin(h.app, 'POST', '/accounts', { username: 'dave' })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ username: 'dave', plan: 'standard', features: [] })
  })

  it('writes PUBLIC_URL into setup links', async () => {
    await h.close()
    h = await harness({ ...adminEnv, PUBLIC_URL: 'https://tokens.example.com' })
    const res = await admin(h.app, 'POST', '/accounts', { username: 'erin' })
    expect(res.body.setupUrl).toMatch(/^https:\/\/tokens\.example\.com\/account\/setup\/[\w-]{43}$/)
  })

  it.each([
    [{ username: 'Bad Name' }, 422, 'resources are invalid', /^username must be 1-32/],
    [{ username: 'x', plan: 'gold' }, 422, 'resources are invalid', /^no such plan: gold$/],
    [
      { username: 'x', features: ['nope'] },
      422,
      'resources are invalid',
      /^no such feature: nope$/,
    ],
    [{ username: 'alice' }, 409, 'account already exists', /^account alice already exists$/],
  ])('refuses %j with %i %s', async (body, status, message, details) => {
    const res = await admin(h.app, 'POST', '/accounts', body)
    expect(res.status).toBe(status)
    expect(res.body).toEqual({ message, details: expect.stringMatching(details) })
  })

  it.each([
    ['no body', undefined],
    ['no username', { plan: 'pro' }],
    ['a numeric username', { username: 5 }],
    ['features not a list', { username: 'x', features: 'navigation' }],
    ['an array', []],
  ])('refuses %s with 422 resources are invalid', async (_what, body) => {
    const res = await admin(h.app, 'POST', '/accounts', body)
    expect(res.status).toBe(422)
    expect(res.body.message).toBe('resources are invalid')
  })
})

describe('reading and listing accounts', () => {
  it('answers an account, or 404 No such user', async () => {
    expect(await admin(h.app, 'GET', '/accounts/alice')).toMatchObject({
      status: 200,
      body: {
        username: 'alice',
        plan: 'standard',
        features: [],
        created: iso(T0),
        disabled: false,
      },
    })
    expect(Object.keys((await admin(h.app, 'GET', '/accounts/alice')).body)).toEqual([
      'username',
      'plan',
      'features',
      'created',
      'disabled',
    ])
    for (const name of ['zed', 'NOT%20VALID']) {
      expect(await admin(h.app, 'GET', `/accounts/${name}`)).toMatchObject({
        status: 404,
        body: { message: 'No such user' },
      })
    }
  })

  it('pages in username order with a Link header to the next page', async () => {
    for (const name of ['carol', 'dave', 'erin'])
      await h.ctx.accounts.create(name, undefined, [], { type: 'cli' })
    const first = await admin(h.app, 'GET', '/accounts?limit=2')
    expect(first.status).toBe(200)
    expect(first.body.map((a: { username: string }) => a.username)).toEqual(['alice', 'bob'])
    expect(first.headers.link).toBe(`<${origin}/admin/v1/accounts?limit=2&start=bob>; rel="next"`)
    const second = await admin(h.app, 'GET', '/accounts?limit=2&start=bob')
    expect(second.body.map((a: { username: string }) => a.username)).toEqual(['carol', 'dave'])
    expect(second.headers.link).toBe(`<${origin}/admin/v1/accounts?limit=2&start=dave>; rel="next"`)
    const last = await admin(h.app, 'GET', '/accounts?limit=2&start=dave')
    expect(last.body.map((a: { username: string }) => a.username)).toEqual(['erin'])
    expect(last.headers.link).toBeUndefined()
    const whole = await admin(h.app, 'GET', '/accounts')
    expect(whole.body).toHaveLength(5)
    expect(whole.headers.link).toBeUndefined()
  })

  it.each([
    ['limit=0', 'limit must be an integer between 1 and 100'],
    ['limit=101', 'limit must be an integer between 1 and 100'],
    ['limit=x', 'limit must be an integer between 1 and 100'],
    ['start=Not!A!Name', 'start is invalid'],
  ])('refuses %s with 422 %s', async (query, message) => {
    expect(await admin(h.app, 'GET', `/accounts?${query}`)).toMatchObject({
      status: 422,
      body: { message },
    })
  })
})

describe('changing accounts', () => {
  it('changes plan and features, removing the scopes the account no longer has from its tokens', async () => {
    await admin(h.app, 'POST', '/accounts', {
      username: 'carol',
      plan: 'pro',
      features: ['navigation'],
    })
    const sk = await h.token('carol', ['tokens:read', 'user:write', 'analytics:read'])
    const pk = await h.token('carol', ['navigation:read', 'styles:read'])
    h.clock.now = T0 + 60_000
    const res = await admin(h.app, 'PATCH', '/accounts/carol', { plan: 'standard', features: [] })
    expect(res).toMatchObject({
      status: 200,
      body: { username: 'carol', plan: 'standard', features: [], disabled: false },
    })
    const listed = await call(h.app, 'GET', '/tokens/v2/carol', sk.token)
    const scopes = Object.fromEntries(
      listed.body.map((t: { id: string; scopes: string[]; default: boolean }) => [
        t.default ? 'default' : t.id,
        t.scopes,
      ]),
    )
    expect(scopes).toEqual({
      default: standardPublic,
      [sk.id]: ['tokens:read'],
      [pk.id]: ['styles:read'],
    })
    expect(
      await admin(h.app, 'PATCH', '/accounts/carol', { features: ['navigation'] }),
    ).toMatchObject({
      status: 200,
      body: { plan: 'standard', features: ['navigation'] },
    })
    const [event] = await h.ctx.audit.list({
      username: 'carol',
      actions: ['account.changed'],
      limit: 2,
    })
    expect(event).toMatchObject({
      actor: { type: 'admin', id: 'k1' },
      details: { tokensChanged: 1 },
    })
  })

  it.each([
    [{}, 'resources are invalid', 'a change names plan, features or both'],
    [{ other: 1 }, 'resources are invalid', 'a change names plan, features or both'],
    [{ plan: 'gold' }, 'resources are invalid', 'no such plan: gold'],
    [{ features: ['nope'] }, 'resources are invalid', 'no such feature: nope'],
  ])('refuses %j with 422', async (body, message, details) => {
    expect(await admin(h.app, 'PATCH', '/accounts/alice', body)).toMatchObject({
      status: 422,
      body: { message, details },
    })
  })

  it('answers 404 No such user for a change, disable, enable, delete or setup link of nobody', async () => {
    const requests = [
      admin(h.app, 'PATCH', '/accounts/zed', { plan: 'pro' }),
      admin(h.app, 'POST', '/accounts/zed/disable'),
      admin(h.app, 'POST', '/accounts/zed/enable'),
      admin(h.app, 'DELETE', '/accounts/zed'),
      admin(h.app, 'POST', '/accounts/zed/setup-url'),
    ]
    for (const res of await Promise.all(requests)) {
      expect([res.status, res.body]).toEqual([
        404,
        { message: 'No such user', details: 'no such account: zed' },
      ])
    }
  })
})

describe('disabling, enabling and deleting accounts', () => {
  it("makes a disabled account's pk, sk and tk TokenRevoked on retrieve and Unauthorized elsewhere, until enabled", async () => {
    const sk = await h.token('alice', all)
    const expires = iso(T0 + 30 * 60_000)
    const tk = (await call(h.app, 'POST', '/tokens/v2/alice', sk.token, { expires })).body.token
    const pk = h.alice.defaultToken.token as string

    const disabled = await admin(h.app, 'POST', '/accounts/alice/disable')
    expect(disabled).toMatchObject({ status: 200, body: { username: 'alice', disabled: true } })
    for (const token of [pk, sk.token, tk]) expect(await retrieve(token)).toBe('TokenRevoked')
    for (const token of [sk.token, tk]) {
      expect(await call(h.app, 'GET', '/tokens/v2/alice', token)).toMatchObject({
        status: 401,
        body: { message: 'Unauthorized' },
      })
    }
    expect(await call(h.app, 'GET', '/scopes/v1/alice', sk.token)).toMatchObject({ status: 401 })
    // Twice is the same state, recorded once.
    expect((await admin(h.app, 'POST', '/accounts/alice/disable')).body.disabled).toBe(true)
    expect((await admin(h.app, 'GET', '/accounts/alice')).body.disabled).toBe(true)

    const enabled = await admin(h.app, 'POST', '/accounts/alice/enable')
    expect(enabled).toMatchObject({ status: 200, body: { username: 'alice', disabled: false } })
    for (const token of [pk, sk.token, tk]) expect(await retrieve(token)).toBe('TokenValid')
    expect((await call(h.app, 'GET', '/tokens/v2/alice', sk.token)).status).toBe(200)
    const events = await h.ctx.audit.list({ username: 'alice', limit: 3 })
    expect(events.map((e) => e.action)).toEqual([
      'account.enabled',
      'account.disabled',
      'token.temporary_issued',
    ])
  })

  it('deletes an account: 204, every token revoked; the name is free an hour later, old tokens stay revoked', async () => {
    const sk = await h.token('alice', all)
    const pk = h.alice.defaultToken.token as string
    const res = await admin(h.app, 'DELETE', '/accounts/alice')
    expect(res.status).toBe(204)
    expect(res.body).toBeUndefined()
    for (const token of [pk, sk.token]) expect(await retrieve(token)).toBe('TokenRevoked')
    expect((await call(h.app, 'GET', '/tokens/v2/alice', sk.token)).status).toBe(401)
    expect((await admin(h.app, 'GET', '/accounts/alice')).status).toBe(404)
    expect((await admin(h.app, 'DELETE', '/accounts/alice')).status).toBe(404)

    const early = await admin(h.app, 'POST', '/accounts', { username: 'alice' })
    expect(early.status).toBe(409)
    expect(early.body).toEqual({
      message: 'account already exists',
      details: `account alice was deleted at ${iso(T0)}; the name can be used again an hour later`,
    })
    h.clock.now = T0 + hour + 1
    const again = await admin(h.app, 'POST', '/accounts', { username: 'alice' })
    expect(again.status).toBe(201)
    for (const token of [pk, sk.token]) expect(await retrieve(token)).toBe('TokenRevoked')
    expect(await retrieve(again.body.defaultToken.token)).toBe('TokenValid')
    // The deleted account's events stay readable under its name.
    const events = await admin(h.app, 'GET', '/accounts/alice/audit?action=account.deleted')
    expect(events.body).toMatchObject([
      {
        action: 'account.deleted',
        actor: { type: 'admin', id: 'k1' },
        details: { tokensRevoked: 2 },
      },
    ])
  })
})

describe('setup links', () => {
  it('makes a new setup link; the earlier one answers 410', async () => {
    const first = await admin(h.app, 'POST', '/accounts/alice/setup-url')
    expect(first.status).toBe(200)
    expect(Object.keys(first.body)).toEqual(['username', 'setupUrl'])
    expect(first.body).toEqual({ username: 'alice', setupUrl: expect.stringMatching(setupLink) })
    const second = await admin(h.app, 'POST', '/accounts/alice/setup-url')
    const old = setupLink.exec(first.body.setupUrl)?.[1]
    const fresh = setupLink.exec(second.body.setupUrl)?.[1]
    expect(fresh).not.toBe(old)
    expect(await page(`/account/setup/${old}`)).toBe(410)
    expect(await page(`/account/setup/${fresh}`)).toBe(200)
  })
})

describe("an account's tokens and their use", () => {
  it('lists tokens oldest first with lastUsed, paged with a Link header', async () => {
    h.clock.now = T0 + 500
    const sk = await h.token('alice', all)
    h.clock.now = T0 + 1000
    const pk = await h.token('alice', ['styles:read'])
    h.clock.now = T0 + 7 * 60_000 + 5000
    expect(await retrieve(pk.token)).toBe('TokenValid')
    await h.ctx.usage.flush()

    const res = await admin(h.app, 'GET', '/accounts/alice/tokens')
    expect(res.status).toBe(200)
    expect(res.headers.link).toBeUndefined()
    expect(
      res.body.map((t: { id: string; lastUsed: string | null }) => [t.id, t.lastUsed]),
    ).toEqual([
      [h.alice.defaultToken.id, null],
      [sk.id, null],
      [pk.id, '2026-11-22T12:07:00.000Z'],
    ])
    // An sk's string is never listed; a pk's is, as in the token API.
    expect(res.body[1]).not.toHaveProperty('token')
    expect(res.body[2]).toMatchObject({ usage: 'pk', token: pk.token, scopes: ['styles:read'] })

    const first = await admin(h.app, 'GET', '/accounts/alice/tokens?limit=2')
    expect(first.body.map((t: { id: string }) => t.id)).toEqual([h.alice.defaultToken.id, sk.id])
    const link =
      /^<https:\/\/127\.0\.0\.1:8443\/admin\/v1\/accounts\/alice\/tokens\?limit=2&start=([^>]+)>; rel="next"$/.exec(
        String(first.headers.link),
      )
    expect(link).not.toBeNull()
    const second = await admin(h.app, 'GET', `/accounts/alice/tokens?limit=2&start=${link?.[1]}`)
    expect(second.body.map((t: { id: string }) => t.id)).toEqual([pk.id])
    expect(second.headers.link).toBeUndefined()
    // A cursor of alice's listing is no cursor of bob's.
    expect(await admin(h.app, 'GET', `/accounts/bob/tokens?start=${link?.[1]}`)).toMatchObject({
      status: 422,
      body: { message: 'start is invalid' },
    })
    expect(await admin(h.app, 'GET', '/accounts/zed/tokens')).toMatchObject({
      status: 404,
      body: { message: 'No such user' },
    })
  })

  it("answers a token's last use and validations per hour", async () => {
    const pk = await h.token('alice', ['styles:read'])
    const path = `/accounts/alice/tokens/${pk.id}/usage`
    expect(await admin(h.app, 'GET', path)).toMatchObject({
      status: 200,
      body: { lastUsed: null, hours: [] },
    })
    h.clock.now = T0 + 5 * 60_000
    for (let i = 0; i < 3; i++) await retrieve(pk.token)
    h.clock.now = T0 + hour + 60_000
    await retrieve(pk.token)
    await h.ctx.usage.flush()
    const res = await admin(h.app, 'GET', path)
    expect(res).toMatchObject({ status: 200 })
    expect(res.body).toEqual({
      lastUsed: '2026-11-22T13:01:00.000Z',
      hours: [
        { hour: '2026-11-22T12', count: 3 },
        { hour: '2026-11-22T13', count: 1 },
      ],
    })
  })

  it('answers 404 Not found for a token of another account or no token, No such user for nobody', async () => {
    const cases: [string, string][] = [
      [`/accounts/alice/tokens/${h.bob.defaultToken.id}/usage`, 'Not found'],
      ['/accounts/alice/tokens/cnosuchtoken0000000000000/usage', 'Not found'],
      ['/accounts/alice/tokens/garbage/usage', 'Not found'],
      [`/accounts/zed/tokens/${h.bob.defaultToken.id}/usage`, 'No such user'],
    ]
    for (const [path, message] of cases) {
      expect(await admin(h.app, 'GET', path)).toMatchObject({ status: 404, body: { message } })
    }
  })
})

describe('the audit log', () => {
  /** Events an hour apart: bob changed at 13:00, carol created at 14:00, alice disabled at 15:00. */
  const history = async () => {
    h.clock.now = T0 + hour
    await admin(h.app, 'PATCH', '/accounts/bob', { plan: 'pro' })
    h.clock.now = T0 + 2 * hour
    await h.ctx.accounts.create('carol', undefined, [], { type: 'cli' })
    h.clock.now = T0 + 3 * hour
    await admin(h.app, 'POST', '/accounts/alice/disable')
  }
  const shape = (events: { action: string; account?: string }[]) =>
    events.map((e) => `${e.action} ${e.account}`)

  it('lists every event newest first, with who, from where and on what', async () => {
    await history()
    const res = await admin(h.app, 'GET', '/audit')
    expect(res.status).toBe(200)
    expect(res.headers.link).toBeUndefined()
    expect(shape(res.body)).toEqual([
      'account.disabled alice',
      'account.created carol',
      'account.changed bob',
      'account.created bob',
      'account.created alice',
    ])
    expect(res.body[0]).toEqual({
      id: expect.stringMatching(/^[0-9a-z]{25}$/),
      at: iso(T0 + 3 * hour),
      action: 'account.disabled',
      actor: { type: 'admin', id: 'k1' },
      account: 'alice',
      target: { type: 'account', id: 'alice' },
      address: '127.0.0.1',
      requestId: expect.any(String),
    })
    expect(res.body[2].details).toEqual({ plan: 'pro', features: [], tokensChanged: 0 })
    expect(res.body[1].actor).toEqual({ type: 'cli' })
  })

  it('filters by action, time and account', async () => {
    await history()
    const list = async (url: string) => shape((await admin(h.app, 'GET', url)).body)
    expect(await list('/audit?action=account.created')).toEqual([
      'account.created carol',
      'account.created bob',
      'account.created alice',
    ])
    expect(await list('/audit?action=account.disabled,%20account.changed')).toEqual([
      'account.disabled alice',
      'account.changed bob',
    ])
    expect(await list(`/audit?since=${iso(T0 + hour)}`)).toEqual([
      'account.disabled alice',
      'account.created carol',
      'account.changed bob',
    ])
    expect(await list(`/audit?since=${iso(T0 + hour)}&until=${iso(T0 + 3 * hour)}`)).toEqual([
      'account.created carol',
      'account.changed bob',
    ])
    expect(await list('/audit?since=2026-11-22T14:00:00%2B01:00&until=2026-11-23')).toEqual([
      'account.disabled alice',
      'account.created carol',
      'account.changed bob',
    ])
    expect(await list('/accounts/alice/audit')).toEqual([
      'account.disabled alice',
      'account.created alice',
    ])
    expect(await list('/accounts/alice/audit?action=account.created')).toEqual([
      'account.created alice',
    ])
    expect(await list('/accounts/nobody/audit')).toEqual([])
  })

  it.each([
    ['action=account.nope', 'resources are invalid', 'no such action: account.nope'],
    ['action=account.created,token.eaten', 'resources are invalid', 'no such action: token.eaten'],
    ['since=yesterday', 'resources are invalid', 'since must be an ISO 8601 date or timestamp'],
    ['until=2026-02-31', 'resources are invalid', 'until must be an ISO 8601 date or timestamp'],
    ['limit=0', 'limit must be an integer between 1 and 100', undefined],
    ['start=garbage', 'start is invalid', undefined],
  ])('refuses %s with 422 %s', async (query, message, details) => {
    for (const path of ['/audit', '/accounts/alice/audit']) {
      const res = await admin(h.app, 'GET', `${path}?${query}`)
      expect(res.status).toBe(422)
      expect(res.body).toEqual(details === undefined ? { message } : { message, details })
    }
  })

  it('pages newest first with a Link header carrying the filters, the cursor being the last id', async () => {
    for (let i = 0; i < 4; i++) {
      h.clock.now = T0 + (i + 1) * 60_000
      await admin(h.app, 'POST', `/accounts/alice/${i % 2 === 0 ? 'disable' : 'enable'}`)
    }
    const filters = 'action=account.disabled%2Caccount.enabled&since=2026-11-22T12%3A00%3A30.000Z'
    const seen: string[] = []
    let url: string | undefined =
      `/audit?limit=3&action=account.disabled,account.enabled&since=${iso(T0 + 30_000)}`
    const links: (string | undefined)[] = []
    while (url !== undefined) {
      const res = await admin(h.app, 'GET', url)
      expect(res.status).toBe(200)
      seen.push(...res.body.map((e: { id: string; at: string }) => e.at))
      const link = res.headers.link as string | undefined
      links.push(link)
      url = link && /^<https:\/\/127\.0\.0\.1:8443\/admin\/v1(\S+)>; rel="next"$/.exec(link)?.[1]
    }
    expect(seen).toEqual([4, 3, 2, 1].map((m) => iso(T0 + m * 60_000)))
    const all = (await admin(h.app, 'GET', '/audit?action=account.disabled,account.enabled')).body
    expect(links).toEqual([
      `<${origin}/admin/v1/audit?limit=3&start=${all[2].id}&${filters}>; rel="next"`,
      undefined,
    ])
    const perAccount = await admin(h.app, 'GET', '/accounts/alice/audit?limit=1')
    expect(perAccount.headers.link).toBe(
      `<${origin}/admin/v1/accounts/alice/audit?limit=1&start=${perAccount.body[0].id}>; rel="next"`,
    )
  })
})

describe('the OpenAPI document', () => {
  it('documents the admin API under its tag and bearer scheme, and the token API as before', async () => {
    const doc = (await call(h.app, 'GET', '/openapi.json')).body
    const adminPaths = Object.keys(doc.paths).filter((p) => p.startsWith('/admin/v1/'))
    expect(adminPaths.sort()).toEqual([
      '/admin/v1/accounts',
      '/admin/v1/accounts/{username}',
      '/admin/v1/accounts/{username}/audit',
      '/admin/v1/accounts/{username}/credits',
      '/admin/v1/accounts/{username}/credits/decrement',
      '/admin/v1/accounts/{username}/credits/increment',
      '/admin/v1/accounts/{username}/disable',
      '/admin/v1/accounts/{username}/enable',
      '/admin/v1/accounts/{username}/members',
      '/admin/v1/accounts/{username}/members/{login}',
      '/admin/v1/accounts/{username}/portal-links',
      '/admin/v1/accounts/{username}/ratelimits',
      '/admin/v1/accounts/{username}/setup-url',
      '/admin/v1/accounts/{username}/token-policy',
      '/admin/v1/accounts/{username}/tokens',
      '/admin/v1/accounts/{username}/tokens/{token_id}/credits',
      '/admin/v1/accounts/{username}/tokens/{token_id}/credits/decrement',
      '/admin/v1/accounts/{username}/tokens/{token_id}/credits/increment',
      '/admin/v1/accounts/{username}/tokens/{token_id}/roll',
      '/admin/v1/accounts/{username}/tokens/{token_id}/usage',
      '/admin/v1/accounts/{username}/trust-policies',
      '/admin/v1/accounts/{username}/usage',
      '/admin/v1/accounts/{username}/usage/tokens',
      '/admin/v1/accounts/{username}/verifications',
      '/admin/v1/audit',
      '/admin/v1/credits/leases',
      '/admin/v1/events',
      '/admin/v1/introspect',
      '/admin/v1/leaks',
      '/admin/v1/ratelimit-leases',
      '/admin/v1/ratelimits/{namespace}',
      '/admin/v1/ratelimits/{namespace}/overrides',
      '/admin/v1/ratelimits/{namespace}/overrides/{identifier}',
      '/admin/v1/usage/reports',
      '/admin/v1/webhooks',
      '/admin/v1/webhooks/{id}',
      '/admin/v1/webhooks/{id}/deliveries',
      '/admin/v1/webhooks/{id}/ping',
      '/admin/v1/webhooks/{id}/secret',
    ])
    const operations = adminPaths.flatMap((p) =>
      Object.entries(doc.paths[p]).map(([method, op]) => ({
        ...(op as object),
        name: `${method} ${p}`,
      })),
    )
    expect(operations).toHaveLength(55)
    // Each names the operator scope it needs (the verifier's six; every other, admin).
    const verifier = [
      'get /admin/v1/events',
      'post /admin/v1/credits/leases',
      'post /admin/v1/introspect',
      'post /admin/v1/ratelimit-leases',
      'post /admin/v1/ratelimits/{namespace}',
      'post /admin/v1/usage/reports',
    ]
    for (const op of operations as {
      name: string
      tags: string[]
      security: unknown
      'x-operator-scope': string
      responses: object
    }[]) {
      expect(op.tags).toEqual(['admin'])
      const scope = verifier.includes(op.name) ? 'verifier' : 'admin'
      // The scope apart from the requirement: tools read a requirement's roles as OAuth scopes.
      expect([op.name, op.security, op['x-operator-scope']]).toEqual([
        op.name,
        [{ operatorKey: [] }],
        scope,
      ])
      expect(Object.keys(op.responses)).toContain('401')
    }
    expect(doc.components.securitySchemes.operatorKey).toMatchObject({
      type: 'http',
      scheme: 'bearer',
    })
    // The token API first (the renderer at /docs lists tags in this order), then the admin API.
    expect(doc.tags).toEqual([
      { name: 'tokens', description: expect.stringContaining('`access_token` query parameter') },
      { name: 'leaks', description: expect.stringContaining('GitHub secret scanning') },
      { name: 'admin', description: expect.stringContaining('rel="next"') },
    ])
    const list = doc.paths['/tokens/v2/{username}'].get
    expect(list.tags).toEqual(['tokens'])
    expect(list.security).toEqual([{ accessToken: [] }, { bearerToken: [] }])
    expect(list.description).toBe('Requires the `tokens:read` scope.')
    expect(list.responses['200'].description).toBe('OK')
    // No body; the rate limit's headers, as on every answer of the token API.
    const limits = [
      'X-Rate-Limit-Interval',
      'X-Rate-Limit-Limit',
      'X-Rate-Limit-Reset',
      'RateLimit-Policy',
      'RateLimit',
    ]
    expect(doc.paths['/tokens/v2/{username}/{token_id}'].delete.responses['204']).toEqual({
      description: 'No content',
      headers: Object.fromEntries(
        limits.map((name) => [name, { $ref: `#/components/headers/${name}` }]),
      ),
    })
    expect(doc.paths['/admin/v1/audit'].get.description).toContain(
      '`start` = the id of the last event',
    )
  })
})
