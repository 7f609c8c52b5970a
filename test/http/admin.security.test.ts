import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AdminKeys } from '../../src/admin/keys.js'
import { all, call, type Harness, harness } from '../helpers.js'
import { admin, adminEnv, secrets } from './admin-client.js'

/**
 * The admin API answers nothing without a valid operator key: not to an account's token, in the
 * query or as a bearer, not to a wrong, malformed or revoked key, and not on unknown paths.
 */

let h: Harness
afterEach(() => h?.close())

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
const routes = (tokenId: string): [Method, string, unknown?][] => [
  ['POST', '/accounts', { username: 'mallory' }],
  ['GET', '/accounts'],
  ['GET', '/accounts/alice'],
  ['PATCH', '/accounts/alice', { plan: 'pro' }],
  ['POST', '/accounts/alice/disable'],
  ['POST', '/accounts/alice/enable'],
  ['DELETE', '/accounts/alice'],
  ['POST', '/accounts/alice/setup-url'],
  ['GET', '/accounts/alice/tokens'],
  ['GET', `/accounts/alice/tokens/${tokenId}/usage`],
  ['GET', '/accounts/alice/audit'],
  ['GET', '/accounts/alice/token-policy'],
  ['PUT', '/accounts/alice/token-policy', { maxSkLifetimeDays: 1 }],
  ['GET', '/accounts/alice/ratelimits'],
  ['PUT', '/accounts/alice/ratelimits', { limits: [] }],
  ['GET', '/audit'],
  ['GET', '/events'],
  ['POST', '/introspect', { token: 'x' }],
  ['POST', '/webhooks', { url: 'https://hooks.example.com/tessera' }],
  ['GET', '/webhooks'],
  ['GET', '/webhooks/wh_x'],
  ['DELETE', '/webhooks/wh_x'],
  ['GET', '/webhooks/wh_x/secret'],
  ['POST', '/webhooks/wh_x/ping'],
  ['GET', '/webhooks/wh_x/deliveries'],
  ['GET', '/no-such-route'],
  ['DELETE', '/'],
]

describe('admin API authentication', () => {
  it('answers every route and unknown path 401 without a valid operator key, changing nothing', async () => {
    h = await harness(adminEnv)
    const sk = await h.token('alice', all)
    const before = await h.ctx.audit.list({ limit: 100 })
    const flipped = `${secrets.k1.slice(0, -1)}${secrets.k1.endsWith('z') ? 'y' : 'z'}`
    // RFC 6750 section 3.1: a bearer key given and refused is an `invalid_token`.
    const refused = ', error="invalid_token"'
    const credentials: [string, { header?: string; query?: string; error?: string }][] = [
      ['no credential', {}],
      ['a wrong key', { header: 'Bearer not-a-key', error: refused }],
      ['a key with its last character changed', { header: `Bearer ${flipped}`, error: refused }],
      ['a key id instead of the key', { header: 'Bearer k1', error: refused }],
      ['the id:secret entry', { header: `Bearer k1:${secrets.k1}`, error: refused }],
      ['a key under another scheme', { header: `Basic ${secrets.k1}` }],
      ['an empty bearer', { header: 'Bearer ' }],
      ["an account's sk token as bearer", { header: `Bearer ${sk.token}`, error: refused }],
      ["an account's sk token as access_token", { query: sk.token }],
      ['a key as access_token', { query: secrets.k1 }],
    ]
    for (const [method, url, body] of routes(sk.id)) {
      for (const [what, { header, query, error = '' }] of credentials) {
        const res = await h.app.inject({
          method,
          url: `/admin/v1${url}${query === undefined ? '' : `?access_token=${query}`}`,
          headers: {
            ...(header === undefined ? {} : { authorization: header }),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        })
        expect([method, url, what, res.statusCode, res.json()]).toEqual([
          method,
          url,
          what,
          401,
          { message: 'Unauthorized' },
        ])
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
        expect(res.headers['www-authenticate']).toBe(`Bearer realm="admin"${error}`)
      }
    }
    expect(await h.ctx.audit.list({ limit: 100 })).toEqual(before)
    expect(await h.ctx.accounts.get('alice')).toMatchObject({ plan: 'standard', disabled: false })
    expect(await h.ctx.accounts.find('mallory')).toBeUndefined()
    // With a key, the same unknown path is simply not there.
    expect(await admin(h.app, 'GET', '/no-such-route')).toMatchObject({
      status: 404,
      body: { message: 'Not found' },
    })
  })

  it('takes every key of ADMIN_KEYS, the scheme in any case, and records which key acted', async () => {
    h = await harness(adminEnv)
    expect((await admin(h.app, 'GET', '/accounts/alice', undefined, secrets.k1)).status).toBe(200)
    const res = await h.app.inject({
      method: 'POST',
      url: '/admin/v1/accounts/alice/disable',
      headers: { authorization: `bearer ${secrets.k2}` },
    })
    expect(res.statusCode).toBe(200)
    const [event] = await h.ctx.audit.list({ username: 'alice', limit: 1 })
    expect(event).toMatchObject({ action: 'account.disabled', actor: { type: 'admin', id: 'k2' } })
  })

  it('never lets an account token reach the admin API, even next to a wrong key', async () => {
    h = await harness(adminEnv)
    const sk = await h.token('alice', all)
    const res = await h.app.inject({
      method: 'GET',
      url: `/admin/v1/accounts?access_token=${sk.token}`,
      headers: { authorization: `Bearer ${sk.token}` },
    })
    expect([res.statusCode, res.json()]).toEqual([401, { message: 'Unauthorized' }])
    // And an operator key is no access token for the token API.
    expect(await call(h.app, 'GET', '/tokens/v2/alice', secrets.k1)).toMatchObject({
      status: 401,
      body: { message: 'Unauthorized' },
    })
  })
})

describe('operator keys kept in DATA_DIR', () => {
  it('accepts a key made by another process at once, and refuses it once revoked', async () => {
    h = await harness()
    expect((await admin(h.app, 'GET', '/accounts')).status).toBe(401)
    // What `tessera admin-key create` and `revoke` do, from a process of their own.
    const cli = AdminKeys.open({ dataDir: h.dir })
    const made = cli.create(Date.now(), 'admin', 'backend')
    expect(made.key).toMatch(/^tsa_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/)
    expect(made.key).toContain(`tsa_${made.id}_`)
    expect((await admin(h.app, 'GET', '/accounts', undefined, made.key)).status).toBe(200)
    expect((await admin(h.app, 'GET', '/accounts', undefined, made.id)).status).toBe(401)

    const other = cli.create(Date.now(), 'admin')
    expect(cli.revoke(made.id, Date.parse('2026-11-23T00:00:00.000Z'))).toEqual({
      revoked: '2026-11-23T00:00:00.000Z',
      changed: true,
    })
    expect(await admin(h.app, 'GET', '/accounts', undefined, made.key)).toMatchObject({
      status: 401,
      body: { message: 'Unauthorized' },
    })
    expect((await admin(h.app, 'GET', '/accounts', undefined, other.key)).status).toBe(200)
    expect(cli.revoke(made.id, Date.now())).toEqual({
      revoked: '2026-11-23T00:00:00.000Z',
      changed: false,
    })
    expect(cli.revoke('nosuchkey', Date.now())).toBeUndefined()
    expect(h.ctx.adminKeys.list()).toEqual([
      {
        id: made.id,
        scope: 'admin',
        created: made.created,
        note: 'backend',
        revoked: '2026-11-23T00:00:00.000Z',
      },
      { id: other.id, scope: 'admin', created: other.created },
    ])
  })

  it('stores only hashes, in a file only its owner may open; a file open to others is refused', async () => {
    h = await harness()
    const made = AdminKeys.open({ dataDir: h.dir }).create(Date.now(), 'verifier')
    const file = path.join(h.dir, 'admin-keys.json')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const text = readFileSync(file, 'utf8')
    expect(text).not.toContain(made.key.slice(`tsa_${made.id}_`.length))
    expect(JSON.parse(text)).toEqual({
      keys: [
        {
          id: made.id,
          hash: expect.stringMatching(/^[0-9a-f]{64}$/),
          scope: 'verifier',
          created: made.created,
        },
      ],
    })

    const introspect = () => admin(h.app, 'POST', '/introspect', { token: 'x' }, made.key)
    chmodSync(file, 0o644)
    expect((await introspect()).status).toBe(401)
    chmodSync(file, 0o600)
    expect((await introspect()).status).toBe(200)
    expect(() => AdminKeys.open({ dataDir: h.dir })).not.toThrow()
    chmodSync(file, 0o640)
    expect(() => AdminKeys.open({ dataDir: h.dir })).toThrow(
      `${file} is accessible by other users (mode 0640); run chmod 600 ${file}`,
    )
  })

  it('keeps the full scope of a key written before scopes; a verifier key is refused outside its scope', async () => {
    h = await harness()
    const made = AdminKeys.open({ dataDir: h.dir }).create(Date.now(), 'admin')
    const vf = AdminKeys.open({ dataDir: h.dir }).create(Date.now(), 'verifier')
    const file = path.join(h.dir, 'admin-keys.json')
    // The file as a version without scopes wrote it: no `scope` on its key.
    const { keys } = JSON.parse(readFileSync(file, 'utf8'))
    const { scope: _, ...old } = keys[0]
    writeFileSync(file, JSON.stringify({ keys: [old, keys[1]] }), { mode: 0o600 })
    expect(h.ctx.adminKeys.list().map((k) => [k.id, k.scope])).toEqual([
      [made.id, 'admin'],
      [vf.id, 'verifier'],
    ])
    expect((await admin(h.app, 'POST', '/accounts', { username: 'carol' }, made.key)).status).toBe(
      201,
    )
    expect(await admin(h.app, 'POST', '/accounts', { username: 'dave' }, vf.key)).toMatchObject({
      status: 403,
      body: {
        message: "the operator key's scope does not allow this",
        details: `key ${vf.id} has the verifier scope; POST /admin/v1/accounts needs the admin scope`,
      },
    })
    // A scope this version does not know (a later version's file): the key is not valid.
    writeFileSync(file, JSON.stringify({ keys: [{ ...keys[1], scope: 'reader' }] }), {
      mode: 0o600,
    })
    expect((await admin(h.app, 'POST', '/introspect', { token: 'x' }, vf.key)).status).toBe(401)
  })

  it('ignores the key file while ADMIN_KEYS is set', async () => {
    h = await harness(adminEnv)
    const made = AdminKeys.open({ dataDir: h.dir }).create(Date.now(), 'admin')
    expect((await admin(h.app, 'GET', '/accounts', undefined, made.key)).status).toBe(401)
    expect(() => h.ctx.adminKeys.create(Date.now(), 'admin')).toThrow(
      'ADMIN_KEYS is set: change it on every instance instead',
    )
    expect(h.ctx.adminKeys.list()).toEqual([
      { id: 'k1', scope: 'admin' },
      { id: 'k2', scope: 'admin' },
    ])
  })
})
