import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { parsePrometheus } from '../prometheus.js'
import { admin, adminEnv, secrets } from './admin-client.js'

/**
 * `POST /admin/v1/introspect`: RFC 7662 for the APIs behind Tessera. Active answers carry every
 * field for pk, sk and tk; inactive ones only `active` and retrieve's `code`.
 */

let h: Harness
beforeEach(async () => {
  h = await harness(adminEnv)
})
afterEach(() => h.close())

const standardPublic = ['styles:tiles', 'styles:read', 'fonts:read', 'datasets:read', 'vision:read']
const seconds = (ms: number) => Math.floor(ms / 1000)

const introspect = (token: unknown) => admin(h.app, 'POST', '/introspect', { token })

/** The form RFC 7662 describes; `headers` may replace the operator key or the content type. */
async function introspectForm(body: string, headers: Record<string, string> = {}) {
  const res = await h.app.inject({
    method: 'POST',
    url: '/admin/v1/introspect',
    headers: {
      authorization: `Bearer ${secrets.k1}`,
      'content-type': 'application/x-www-form-urlencoded',
      ...headers,
    },
    payload: body,
  })
  return { status: res.statusCode, body: res.json() }
}

const retrieve = async (token: string) =>
  (await call(h.app, 'GET', `/tokens/v2?access_token=${encodeURIComponent(token)}`)).body.code

/** An sk that may issue temporary tokens with some public scopes too. */
const authorizer = () => h.token('alice', [...all, 'styles:read'])

async function temporary(sk: string, scopes: string[]) {
  const expires = new Date(T0 + 600_000).toISOString()
  const res = await call(h.app, 'POST', '/tokens/v2/alice', sk, { expires, scopes })
  expect(res.status).toBe(200)
  return res.body.token as string
}

describe('active tokens', () => {
  it('describes a pk: scopes, account, creation time, client and id', async () => {
    const pk = h.alice.defaultToken
    const res = await introspect(pk.token)
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.body).toStrictEqual({
      active: true,
      scope: standardPublic.join(' '),
      username: 'alice',
      token_type: 'Bearer',
      iat: seconds(T0),
      client_id: 'api',
      id: pk.id,
      usage: 'pk',
      code: 'TokenValid',
    })
    expect(Object.keys(res.body)).toEqual([
      'active',
      'code',
      'scope',
      'username',
      'token_type',
      'iat',
      'client_id',
      'id',
      'usage',
    ])
  })

  it('describes an sk with its allowed URLs and its creation time', async () => {
    h.clock.now = T0 + 90_500
    const sk = await h.token('alice', all, {
      allowedUrls: ['https://example.com/maps', '*.example.org'],
    })
    const res = await introspect(sk.token)
    expect(res).toMatchObject({ status: 200 })
    expect(res.body).toStrictEqual({
      active: true,
      scope: all.join(' '),
      username: 'alice',
      token_type: 'Bearer',
      iat: seconds(T0) + 90,
      client_id: 'api',
      id: sk.id,
      usage: 'sk',
      allowedUrls: ['https://example.com/maps', '*.example.org'],
      code: 'TokenValid',
    })
  })

  it('describes a tk from its payload: expiry, issue time, no id', async () => {
    const sk = await authorizer()
    const tk = await temporary(sk.token, ['styles:read', 'tokens:read'])
    const res = await introspect(tk)
    expect(res.status).toBe(200)
    expect(res.body).toStrictEqual({
      active: true,
      scope: 'styles:read tokens:read',
      username: 'alice',
      token_type: 'Bearer',
      exp: seconds(T0) + 600,
      iat: seconds(T0),
      client_id: 'api',
      usage: 'tk',
      code: 'TokenValid',
    })
  })

  it('shows a change of scopes or allowed URLs at once', async () => {
    const sk = await authorizer()
    const pk = h.alice.defaultToken
    expect((await introspect(pk.token)).body.allowedUrls).toBeUndefined()
    const patched = await call(h.app, 'PATCH', `/tokens/v2/alice/${pk.id}`, sk.token, {
      scopes: ['styles:read'],
      allowedUrls: ['example.com'],
    })
    expect(patched.status).toBe(200)
    expect((await introspect(pk.token)).body).toMatchObject({
      active: true,
      scope: 'styles:read',
      allowedUrls: ['example.com'],
    })
  })
})

describe('inactive tokens', () => {
  /** Only `active` and `code` (and `extra`), and the code retrieve gives for the same string. */
  async function expectInactive(token: string, code: string, extra: object = {}) {
    const res = await introspect(token)
    expect(res.status).toBe(200)
    expect(res.body).toStrictEqual({ active: false, code, ...extra })
    expect(await retrieve(token)).toBe(code)
  }

  it.each([
    ['not-a-token'],
    ['pk.e30.AAAAAAAAAAAAAAAAAAAAAA'], // no `u`
    ['xk.eyJ1IjoiYWxpY2UifQ.AAAAAAAAAAAAAAAAAAAAAA'],
    ['pk..'],
  ])('answers TokenMalformed for %j', async (token) => {
    await expectInactive(token, 'TokenMalformed')
  })

  it('answers TokenInvalid for a bad signature, of a pk and of a tk', async () => {
    const pk = h.alice.defaultToken.token as string
    await expectInactive(`${pk.slice(0, -22)}${'A'.repeat(22)}`, 'TokenInvalid')
    const tk = await temporary((await authorizer()).token, [])
    await expectInactive(`${tk.slice(0, -22)}${'B'.repeat(22)}`, 'TokenInvalid')
  })

  it('answers TokenExpired for a tk past its expiry', async () => {
    const tk = await temporary((await authorizer()).token, ['styles:read'])
    h.clock.now = T0 + 600_000
    await expectInactive(tk, 'TokenExpired')
  })

  it('answers TokenRevoked for a deleted token', async () => {
    const sk = await h.token('alice', all)
    const pk = await h.token('alice', ['styles:read'])
    expect((await introspect(pk.token)).body.active).toBe(true)
    const deleted = await call(h.app, 'DELETE', `/tokens/v2/alice/${pk.id}`, sk.token)
    expect(deleted.status).toBe(204)
    await expectInactive(pk.token, 'TokenRevoked')
  })

  it("answers TokenRevoked for a disabled account's pk, sk and tk, and active once enabled", async () => {
    const sk = await authorizer()
    const tk = await temporary(sk.token, ['styles:read'])
    const tokens = [h.alice.defaultToken.token as string, sk.token, tk]
    expect((await admin(h.app, 'POST', '/accounts/alice/disable')).status).toBe(200)
    for (const token of tokens) await expectInactive(token, 'TokenRevoked')
    expect((await admin(h.app, 'POST', '/accounts/alice/enable')).status).toBe(200)
    for (const token of tokens) expect((await introspect(token)).body.active).toBe(true)
  })

  it("reads the account from the database, not the instance's cache that may lag behind", async () => {
    const sk = await authorizer()
    const tk = await temporary(sk.token, ['styles:read'])
    const tokens = [h.alice.defaultToken.token as string, sk.token, tk]
    for (const token of tokens) expect((await introspect(token)).body.active).toBe(true)
    // Disabled by another instance whose change this instance has not heard of yet.
    await h.ctx.db
      .updateTable('accounts')
      .set({ disabled: 1 })
      .where('username', '=', 'alice')
      .execute()
    for (const token of tokens) {
      expect((await introspect(token)).body).toEqual({ active: false, code: 'TokenRevoked' })
    }
  })

  it("answers TokenRevoked for a deleted account's pk, sk and tk", async () => {
    const sk = await authorizer()
    const tk = await temporary(sk.token, ['styles:read'])
    expect((await admin(h.app, 'DELETE', '/accounts/alice')).status).toBe(204)
    // No account has its name: counted against nobody, which a verifier learns (`unowned`).
    for (const token of [h.alice.defaultToken.token as string, sk.token, tk]) {
      await expectInactive(token, 'TokenRevoked', { unowned: true })
    }
  })
})

describe('request bodies', () => {
  it('takes the RFC 7662 form, with or without a charset, and JSON alike', async () => {
    const pk = h.alice.defaultToken
    const json = await introspect(pk.token)
    const form = await introspectForm(
      `token=${encodeURIComponent(pk.token as string)}&token_type_hint=access_token`,
    )
    expect(form).toEqual({ status: 200, body: json.body })
    const charset = await introspectForm(`token=${pk.token}`, {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
    })
    expect(charset).toEqual({ status: 200, body: json.body })
    const hinted = await admin(h.app, 'POST', '/introspect', {
      token: pk.token,
      token_type_hint: 'refresh_token',
      unknown: 1,
    })
    expect(hinted.body).toEqual(json.body)
  })

  it('takes the first token of a form that repeats it', async () => {
    const pk = h.alice.defaultToken.token as string
    expect((await introspectForm(`token=${pk}&token=nope`)).body.active).toBe(true)
    expect((await introspectForm(`token=nope&token=${pk}`)).body).toEqual({
      active: false,
      code: 'TokenMalformed',
    })
  })

  it.each([
    ['no body', undefined],
    ['no token', {}],
    ['an empty token', { token: '' }],
    ['a numeric token', { token: 5 }],
    ['a null token', { token: null }],
    ['a list of tokens', { token: ['pk.a.b'] }],
    ['a non-string hint', { token: 'pk.a.b', token_type_hint: 1 }],
    ['an array', []],
    ['a string', 'pk.a.b'],
  ])('refuses %s with 422 resources are invalid', async (_what, body) => {
    const res = await admin(h.app, 'POST', '/introspect', body)
    expect(res).toMatchObject({ status: 422, body: { message: 'resources are invalid' } })
  })

  it.each([
    ['a form without a token', 'token_type_hint=access_token'],
    ['a form with an empty token', 'token='],
    ['an empty form', ''],
  ])('refuses %s with 422 resources are invalid', async (_what, body) => {
    const res = await introspectForm(body)
    expect(res).toMatchObject({ status: 422, body: { message: 'resources are invalid' } })
  })

  it('refuses a body that is not JSON, whatever its declared type, with 422', async () => {
    const res = await introspectForm('token=abc', { 'content-type': 'text/plain' })
    expect(res).toEqual({
      status: 422,
      body: { message: 'resources are invalid', details: 'the body is not valid JSON' },
    })
  })

  it('keeps the form parser to this route: the token API still reads a form as JSON', async () => {
    const sk = await h.token('alice', all)
    const res = await h.app.inject({
      method: 'POST',
      url: `/tokens/v2/alice?access_token=${sk.token}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'note=hello',
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({
      message: 'resources are invalid',
      details: 'the body is not valid JSON',
    })
  })
})

describe('authentication', () => {
  it.each([
    ['no Authorization header', null, 'Bearer realm="admin"'],
    ['a wrong operator key', `${secrets.k1}x`, 'Bearer realm="admin", error="invalid_token"'],
    ['an empty key', '', 'Bearer realm="admin"'],
  ])('answers 401 Unauthorized with %s', async (_what, key, challenge) => {
    const res = await admin(h.app, 'POST', '/introspect', { token: 'x' }, key)
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ message: 'Unauthorized' })
    expect(res.headers['www-authenticate']).toBe(challenge)
  })

  it("answers 401 to an account's sk, as bearer or access_token, and to its own token", async () => {
    const sk = await h.token('alice', all)
    expect((await admin(h.app, 'POST', '/introspect', { token: sk.token }, sk.token)).status).toBe(
      401,
    )
    const query = await call(h.app, 'POST', '/admin/v1/introspect', sk.token, { token: sk.token })
    expect(query).toMatchObject({ status: 401, body: { message: 'Unauthorized' } })
    const form = await introspectForm(`token=${sk.token}`, { authorization: `Bearer ${sk.token}` })
    expect(form).toEqual({ status: 401, body: { message: 'Unauthorized' } })
  })

  it('takes any valid operator key', async () => {
    const res = await admin(h.app, 'POST', '/introspect', { token: 'x' }, secrets.k2)
    expect(res.body).toEqual({ active: false, code: 'TokenMalformed' })
  })
})

describe('counting', () => {
  it('counts each introspection as a validation, and a valid pk or sk as a use', async () => {
    // Request counts are kept only when metrics are served.
    await h.close()
    h = await harness({ ...adminEnv, METRICS_PORT: '0' })
    const scrape = async () => parsePrometheus(await h.ctx.metrics.registry.metrics())
    const pk = h.alice.defaultToken
    const sk = await h.token('alice', all)
    const tk = await temporary(sk.token, [])
    const before = await scrape()
    await introspect(pk.token)
    await introspect(pk.token)
    await introspectForm(`token=${sk.token}`)
    await introspect(tk)
    await introspect('nope')
    await introspect(`${(pk.token as string).slice(0, -22)}${'A'.repeat(22)}`)
    await admin(h.app, 'POST', '/introspect', { token: '' }) // refused: no validation
    const after = await scrape()
    const validations = (code: string, usage: string) =>
      after.value('tessera_validations_total', { code, usage }) -
      before.value('tessera_validations_total', { code, usage })
    expect(validations('TokenValid', 'pk')).toBe(2)
    expect(validations('TokenValid', 'sk')).toBe(1)
    expect(validations('TokenValid', 'tk')).toBe(1)
    expect(validations('TokenMalformed', 'none')).toBe(1)
    expect(validations('TokenInvalid', 'pk')).toBe(1)
    const route = { method: 'POST', route: '/admin/v1/introspect' }
    const requests = (status: string) =>
      after.value('tessera_http_requests_total', { ...route, status }) -
      before.value('tessera_http_requests_total', { ...route, status })
    expect([requests('200'), requests('422')]).toEqual([6, 1])

    await h.ctx.usage.flush()
    const hour = new Date(T0).toISOString().slice(0, 13)
    expect((await h.ctx.usage.activity(pk.id)).hours).toEqual([{ hour, count: 2 }])
    // The sk also authorised the tk's creation: one use there, one here.
    expect((await h.ctx.usage.activity(sk.id)).hours).toEqual([{ hour, count: 2 }])
  })
})
