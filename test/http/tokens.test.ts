import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'

let h: Harness
let sk: string
const iso = (ms: number) => new Date(ms).toISOString()
const payloadOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64').toString())

beforeAll(async () => {
  h = await harness()
  sk = (
    await h.token('alice', [...all, 'styles:read', 'styles:tiles', 'styles:write', 'fonts:read'])
  ).token
})
afterAll(() => h.close())

describe('create a token', () => {
  it('makes a pk from public scopes and answers the whole token object', async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      note: 'web',
      scopes: ['styles:read', 'styles:read', 'fonts:read'],
    })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      id: expect.stringMatching(/^c[a-z0-9]{24}$/),
      usage: 'pk',
      client: 'api',
      default: false,
      scopes: ['styles:read', 'fonts:read'],
      note: 'web',
      created: iso(T0),
      modified: iso(T0),
      token: expect.stringMatching(/^pk\.[A-Za-z0-9]+\.[A-Za-z0-9_-]{22}$/),
    })
    expect(payloadOf(res.body.token)).toEqual({ u: 'alice', a: res.body.id })
  })

  it('makes an sk when any scope is secret', async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      scopes: ['styles:read', 'styles:write'],
    })
    expect(res.body).toMatchObject({
      usage: 'sk',
      scopes: ['styles:read', 'styles:write'],
      note: '',
    })
    expect(res.body.token).toMatch(/^sk\./)
  })

  it('makes a pk with no scopes when none are given', async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, {})
    expect(res.body).toMatchObject({ usage: 'pk', scopes: [] })
  })

  it('trims and collapses allowed URLs and ignores unknown fields', async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      scopes: ['styles:read'],
      allowedUrls: [
        ' https://example.com ',
        'https://example.com',
        '*.example.org',
        'localhost:8080/app',
      ],
      resources: ['ignored'],
    })
    expect(res.status).toBe(200)
    expect(res.body.allowedUrls).toEqual([
      'https://example.com',
      '*.example.org',
      'localhost:8080/app',
    ])
  })

  it('refuses a temporary token as the creator of a permanent one with 404', async () => {
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      expires: iso(T0 + 600_000),
      scopes: ['tokens:write'],
    })
    const res = await call(h.app, 'POST', '/tokens/v2/alice', tk.body.token, { note: 'x' })
    expect(res).toMatchObject({ status: 404, body: { message: 'Not found' } })
  })
})

describe('create a temporary token', () => {
  it('answers token, issued_at, expires and expires_in that agree with the payload', async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      expires: '2026-11-22T12:30:00.750Z',
      scopes: ['styles:read'],
    })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      token: expect.stringMatching(/^tk\./),
      issued_at: iso(T0),
      expires: '2026-11-22T12:30:00.000Z',
      expires_in: 1800,
    })
    expect(payloadOf(res.body.token)).toEqual({
      u: 'alice',
      exp: T0 / 1000 + 1800,
      iat: T0 / 1000,
      scopes: ['styles:read'],
      client: 'api',
    })
  })

  it.each([
    ['an offset', '2026-11-22T13:30:00+01:00', 1800],
    ['no zone (UTC)', '2026-11-22T12:10:00', 600],
    ['no fraction', '2026-11-22T12:59:59Z', 3599],
    ['exactly one hour ahead', '2026-11-22T13:00:00.000Z', 3600],
  ])('accepts expires with %s', async (_name, expires, seconds) => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, { expires, scopes: [] })
    expect(res.status).toBe(200)
    expect(res.body.expires_in).toBe(seconds)
  })

  it('lets a temporary token mint one that expires no later than itself', async () => {
    const parent = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      expires: iso(T0 + 600_000),
      scopes: ['tokens:write', 'styles:read'],
    })
    const same = await call(h.app, 'POST', '/tokens/v2/alice', parent.body.token, {
      expires: parent.body.expires,
      scopes: ['styles:read'],
    })
    expect(same.status).toBe(200)
    const later = await call(h.app, 'POST', '/tokens/v2/alice', parent.body.token, {
      expires: iso(T0 + 601_000),
      scopes: [],
    })
    expect(later).toMatchObject({
      status: 422,
      body: { message: 'expires may not be greater than the expiration of the authorizing token' },
    })
    const wider = await call(h.app, 'POST', '/tokens/v2/alice', parent.body.token, {
      expires: iso(T0 + 60_000),
      scopes: ['fonts:read'],
    })
    expect(wider).toMatchObject({ status: 422, body: { message: 'scopes are invalid' } })
  })

  it('is valid until exp and expired from then on', async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      expires: iso(T0 + 60_000),
      scopes: ['styles:read'],
    })
    const token = res.body.token
    const body = {
      usage: 'tk',
      user: 'alice',
      expires: iso(T0 + 60_000),
      created: iso(T0),
      scopes: ['styles:read'],
      client: 'api',
    }
    expect((await call(h.app, 'GET', '/tokens/v2', token)).body).toEqual({
      code: 'TokenValid',
      token: body,
    })
    h.clock.now = T0 + 60_000
    try {
      expect((await call(h.app, 'GET', '/tokens/v2', token)).body).toEqual({
        code: 'TokenExpired',
        token: body,
      })
    } finally {
      h.clock.now = T0
    }
  })
})

describe('update a token', () => {
  it('changes note, scopes and allowed URLs, and stamps modified', async () => {
    const target = await h.token('alice', ['styles:read'], { allowedUrls: ['a.com'] })
    h.clock.now = T0 + 5000
    try {
      const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, sk, {
        note: 'new',
        scopes: ['styles:tiles'],
        allowedUrls: ['b.com'],
      })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        ...target,
        note: 'new',
        scopes: ['styles:tiles'],
        allowedUrls: ['b.com'],
        modified: iso(T0 + 5000),
      })
    } finally {
      h.clock.now = T0
    }
    const cleared = await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, sk, {
      allowedUrls: null,
    })
    expect(cleared.body.allowedUrls).toBeUndefined()
    expect(cleared.body.scopes).toEqual(['styles:tiles'])
  })

  it('answers an sk with its token string, and never changes usage', async () => {
    const target = await h.token('alice', ['styles:write'])
    const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, sk, {
      scopes: ['styles:read'],
    })
    expect(res.body).toMatchObject({ usage: 'sk', scopes: ['styles:read'], token: target.token })
  })

  it('refuses scopes the authorizing token does not hold', async () => {
    const narrow = await h.token('alice', ['tokens:write', 'styles:read'])
    const target = await h.token('alice', ['styles:read'])
    const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, narrow.token, {
      scopes: ['fonts:read'],
    })
    expect(res).toMatchObject({ status: 422, body: { message: 'scopes are invalid' } })
  })

  it('keeps a token created with no scopes without scopes', async () => {
    const target = await h.token('alice', [])
    expect(
      (await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, sk, { scopes: [] })).status,
    ).toBe(200)
    const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, sk, {
      scopes: ['styles:read'],
    })
    expect(res).toMatchObject({ status: 422, body: { message: 'scopes are invalid' } })
  })

  it("refuses another account's token id with 404", async () => {
    const bobs = await h.token('bob', ['styles:read'])
    const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${bobs.id}`, sk, { note: 'mine now' })
    expect(res).toMatchObject({ status: 404, body: { message: 'Not found' } })
  })

  it('takes effect at once on what the token may do', async () => {
    const target = await h.token('alice', ['tokens:read'])
    expect((await call(h.app, 'GET', '/tokens/v2/alice', target.token)).status).toBe(200)
    await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, sk, { scopes: ['scopes:list'] })
    expect((await call(h.app, 'GET', '/tokens/v2/alice', target.token)).status).toBe(404)
  })
})

describe('delete a token', () => {
  it('answers 204 with no body and revokes the token at once', async () => {
    const target = await h.token('alice', all)
    const res = await h.app.inject({
      method: 'DELETE',
      url: `/tokens/v2/alice/${target.id}?access_token=${sk}`,
    })
    expect(res.statusCode).toBe(204)
    expect(res.body).toBe('')
    expect((await call(h.app, 'GET', '/tokens/v2', target.token)).body).toEqual({
      code: 'TokenRevoked',
      token: { usage: 'sk', user: 'alice', authorization: target.id },
    })
    expect(await call(h.app, 'GET', '/scopes/v1/alice', target.token)).toMatchObject({
      status: 401,
      body: { message: 'Unauthorized' },
    })
    expect((await call(h.app, 'DELETE', `/tokens/v2/alice/${target.id}`, sk)).status).toBe(404)
  })
})

describe('retrieve a token', () => {
  it('reports a valid pk and sk with usage, user and authorization', async () => {
    const pk = await h.token('alice', ['styles:read'])
    const secret = await h.token('alice', ['styles:write'])
    const first = await h.app.inject({ url: `/tokens/v2?access_token=${pk.token}` })
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(first.body).toBe(
      `{"code":"TokenValid","token":{"usage":"pk","user":"alice","authorization":"${pk.id}"}}`,
    )
    const res = await call(h.app, 'GET', '/tokens/v2/', secret.token)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      code: 'TokenValid',
      token: { usage: 'sk', user: 'alice', authorization: secret.id },
    })
  })

  it.each([
    'abc',
    'pk.x.y',
    'pk.e30.sig',
    'xx.eyJ1IjoiYSJ9.sig',
    'tk.eyJ1IjoiYSJ9.sig',
    'pk..',
    'a.b.c.d',
    '%00',
    'pk.bnVsbA.sig',
  ])('reports %s as TokenMalformed without a token', async (token) => {
    expect(await call(h.app, 'GET', '/tokens/v2', token)).toMatchObject({
      status: 200,
      body: { code: 'TokenMalformed' },
    })
    expect((await call(h.app, 'GET', '/tokens/v2', token)).body.token).toBeUndefined()
  })

  it('reports a forged signature as TokenInvalid with the parsed body', async () => {
    const pk = await h.token('alice', ['styles:read'])
    const forged = `${pk.token.slice(0, -22)}${'A'.repeat(22)}`
    expect((await call(h.app, 'GET', '/tokens/v2', forged)).body).toEqual({
      code: 'TokenInvalid',
      token: { usage: 'pk', user: 'alice', authorization: pk.id },
    })
  })

  it('does not accept a signature that differs only in its padding bits', async () => {
    const pk = await h.token('alice', ['styles:read'])
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const last = pk.token.at(-1) as string
    const sibling = alphabet[alphabet.indexOf(last) ^ 1] as string
    expect(
      (await call(h.app, 'GET', '/tokens/v2', `${pk.token.slice(0, -1)}${sibling}`)).body.code,
    ).toBe('TokenInvalid')
  })
})

describe('list scopes', () => {
  it('lists every scope of the plan, public: true on public ones only', async () => {
    const res = await call(h.app, 'GET', '/scopes/v1/alice', sk)
    expect(res.status).toBe(200)
    expect(res.body).toHaveLength(19)
    expect(res.body[0]).toEqual({
      id: 'styles:tiles',
      description: 'Read styles as raster tiles',
      public: true,
    })
    expect(res.body.find((s: { id: string }) => s.id === 'tokens:write')).toEqual({
      id: 'tokens:write',
      description: 'Create, update and delete access tokens',
    })
    expect(
      res.body.filter((s: { public?: boolean }) => s.public).map((s: { id: string }) => s.id),
    ).toEqual(['styles:tiles', 'styles:read', 'fonts:read', 'datasets:read', 'vision:read'])
  })

  it('adds the scopes of the plan and features', async () => {
    const carol = await h.ctx.accounts.create('carol', 'pro', ['navigation'], cliActor)
    expect(carol.defaultToken.scopes).toContain('navigation:read')
    const token = await h.token('carol', ['scopes:list', 'user:write'])
    const ids = (await call(h.app, 'GET', '/scopes/v1/carol', token.token)).body.map(
      (s: { id: string }) => s.id,
    )
    expect(ids).toHaveLength(22)
    expect(ids).toEqual(expect.arrayContaining(['user:write', 'analytics:read', 'navigation:read']))
  })
})

describe('the default token', () => {
  it('is a pk holding every public scope, and can be updated but not deleted', async () => {
    const list = await call(h.app, 'GET', '/tokens/v2/alice?default=true', sk)
    expect(list.body).toHaveLength(1)
    const token = list.body[0]
    expect(token).toMatchObject({
      usage: 'pk',
      default: true,
      note: 'Default public token',
      scopes: ['styles:tiles', 'styles:read', 'fonts:read', 'datasets:read', 'vision:read'],
    })
    expect(
      (await call(h.app, 'PATCH', `/tokens/v2/alice/${token.id}`, sk, { note: 'renamed' })).body
        .note,
    ).toBe('renamed')
    expect(await call(h.app, 'DELETE', `/tokens/v2/alice/${token.id}`, sk)).toMatchObject({
      status: 422,
      body: { message: 'the default token cannot be deleted' },
    })
  })
})
