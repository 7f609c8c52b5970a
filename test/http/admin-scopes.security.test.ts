import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { adminRouteTable, operatorScopesDeclared } from '../../src/http/admin/routes.js'
import { type Harness, harness } from '../helpers.js'
import { secrets } from './admin-client.js'

/**
 * Scoped operator keys (issue 43, item 8), over a real socket: a `verifier` key (the one every
 * API behind Tessera holds) does introspection, leases, usage reports and the event stream, and
 * nothing else; and a key reports usage only under its own reporter names.
 */

const verifierSecret = 'edge-one-0123456789abcdefghijklmnopqrstuvwxyz'
const otherVerifierSecret = 'edge-two-0123456789abcdefghijklmnopqrstuvwxyz'
/** `k1` has no scope (a key of before scopes: full); `vf` and `vg` are two verifiers' keys. */
const env = {
  ADMIN_KEYS: `k1:${secrets.k1},vf@verifier:${verifierSecret},vg @ verifier : ${otherVerifierSecret}`,
}
const refusal = "the operator key's scope does not allow this"

interface Answer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes
  body: any
  contentType: string | undefined
}

let h: Harness
let port: number
beforeEach(async () => {
  h = await harness(env)
  await h.app.listen({ host: '127.0.0.1', port: 0 })
  port = (h.app.server.address() as AddressInfo).port
})
afterEach(() => h.close())

/** One request over the socket; an event stream is answered at its headers, then closed. */
function call(key: string, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const contentType = res.headers['content-type']
      if (contentType?.startsWith('text/event-stream')) {
        res.destroy()
        return resolve({ status: res.statusCode ?? 0, body: undefined, contentType })
      }
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body:
            contentType?.startsWith('application/json') && text !== '' ? JSON.parse(text) : text,
          contentType,
        }),
      )
    })
    req.setTimeout(10_000, () => req.destroy(new Error('no answer')))
    req.on('error', (err) => reject(new Error(`${method} ${path}: ${err.message}`)))
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

const auditCount = async () =>
  Number(
    (
      await h.ctx.db
        .selectFrom('audit_events')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

describe('a verifier key', () => {
  it('is refused with 403 on account creation, portal links, roll, credits and the audit log, and changes nothing', async () => {
    const token = h.alice.defaultToken.id
    const before = await auditCount()
    const tries: [string, string, unknown?][] = [
      ['POST', '/admin/v1/accounts', { username: 'mallory' }],
      ['DELETE', '/admin/v1/accounts/alice'],
      ['POST', '/admin/v1/accounts/alice/portal-links', { email: 'x@example.com', role: 'owner' }],
      ['POST', '/admin/v1/accounts/alice/setup-url'],
      ['POST', `/admin/v1/accounts/alice/tokens/${token}/roll`, {}],
      ['PUT', '/admin/v1/accounts/alice/credits', { remaining: 1_000_000 }],
      ['POST', '/admin/v1/accounts/alice/credits/increment', { amount: 5 }],
      ['GET', '/admin/v1/audit'],
      ['GET', '/admin/v1/accounts/alice/audit'],
    ]
    for (const [method, path, body] of tries) {
      const res = await call(verifierSecret, method, path, body)
      expect([method, path, res.status, res.body, res.contentType]).toEqual([
        method,
        path,
        403,
        { message: refusal, details: expect.stringContaining('the verifier scope') },
        'application/json; charset=utf-8',
      ])
    }
    expect(await h.ctx.accounts.find('mallory')).toBeUndefined()
    expect((await h.ctx.accounts.find('alice'))?.username).toBe('alice')
    expect(await h.ctx.credits.get({ account: 'alice' })).toBeUndefined()
    expect(await auditCount()).toBe(before)
    // The same requests with a key of before scopes (full, as it always was) go through.
    const created = await call(secrets.k1, 'POST', '/admin/v1/accounts', { username: 'carol' })
    expect(created.status).toBe(201)
    const audit = await call(secrets.k1, 'GET', '/admin/v1/audit?action=account.created&limit=1')
    expect(audit.body).toMatchObject([
      { action: 'account.created', actor: { type: 'admin', id: 'k1' } },
    ])
  })

  it('introspects, leases, reports and follows the events', async () => {
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 100 })
    const introspected = await call(verifierSecret, 'POST', '/admin/v1/introspect', {
      token: h.alice.defaultToken.token,
      cost: 0,
      count: false,
    })
    expect([introspected.status, introspected.body.active]).toEqual([200, true])
    const lease = await call(verifierSecret, 'POST', '/admin/v1/credits/leases', {
      account: 'alice',
      want: 10,
    })
    expect([lease.status, lease.body.granted]).toEqual([200, 10])
    const report = await call(verifierSecret, 'POST', '/admin/v1/usage/reports', {
      reporter: 'edge-1',
      batch: 'b-1',
      counts: [],
      returned: [{ account: 'alice', amount: 4, lease: lease.body.lease }],
    })
    expect([report.status, report.body]).toEqual([200, { counted: true }])
    expect((await h.ctx.credits.get({ account: 'alice' }))?.remaining).toBe(94)
    const events = await call(verifierSecret, 'GET', '/admin/v1/events')
    expect([events.status, events.contentType]).toEqual([200, 'text/event-stream; charset=utf-8'])
  })
})

describe('the route table of the admin API', () => {
  /** A request each route inside the verifier scope answers 200, by its method and path. */
  const inScope: Record<string, (h: Harness) => unknown> = {
    'POST /admin/v1/introspect': (h) => ({ token: h.alice.defaultToken.token }),
    'POST /admin/v1/credits/leases': () => ({ account: 'alice', want: 1 }),
    'POST /admin/v1/ratelimit-leases': (h) => ({ token: h.alice.defaultToken.token, want: 1 }),
    'POST /admin/v1/usage/reports': () => ({ reporter: 'walk', batch: 'b-1', counts: [] }),
    'GET /admin/v1/events': () => undefined,
    'POST /admin/v1/ratelimits/:namespace': () => ({
      identifier: 'user_1',
      limit: 1,
      duration: 1000,
    }),
  }
  const bodyOf = (method: string) => (['POST', 'PUT', 'PATCH'].includes(method) ? {} : undefined)
  const filled = (url: string) =>
    url
      .replace(':username', 'alice')
      .replace(':token_id', h.alice.defaultToken.id)
      .replace(':login', 'alice')
      .replace(':id', 'wh_0000000000000000000000')
      .replace(':namespace', 'signups')
      .replace(':identifier', 'user_1')

  it('declares a scope on every route; a verifier key is refused on every route outside it and answered on those inside', {
    timeout: 60_000,
  }, async () => {
    const table = adminRouteTable(h.app)
    // The whole table: every resource of the admin API, HEAD routes included.
    for (const route of [
      'POST /admin/v1/accounts',
      'GET /admin/v1/audit',
      'HEAD /admin/v1/audit',
      'POST /admin/v1/accounts/:username/portal-links',
      'POST /admin/v1/accounts/:username/tokens/:token_id/roll',
      'PUT /admin/v1/accounts/:username/credits',
      'POST /admin/v1/webhooks',
      'GET /admin/v1/webhooks/:id/secret',
      'PUT /admin/v1/accounts/:username/token-policy',
      'POST /admin/v1/leaks',
      ...Object.keys(inScope),
    ]) {
      expect(table.map((r) => `${r.method} ${r.url}`)).toContain(route)
    }
    for (const route of table) expect(['admin', 'verifier']).toContain(route.scope)
    const verifierRoutes = table
      .filter((r) => r.scope === 'verifier' && r.method !== 'HEAD')
      .map((r) => `${r.method} ${r.url}`)
    // The verifier scope is these six, and a route added to it is added here with its request.
    expect(verifierRoutes.sort()).toEqual(Object.keys(inScope).sort())

    for (const route of table) {
      const name = `${route.method} ${route.url}`
      const path = filled(route.url)
      if (route.scope === 'verifier') {
        const made = inScope[name] ?? inScope[`GET ${route.url}`]
        const res = await call(verifierSecret, route.method, path, made?.(h))
        expect([name, res.status]).toEqual([name, 200])
      } else {
        const res = await call(verifierSecret, route.method, path, bodyOf(route.method))
        expect([name, res.status, route.method === 'HEAD' ? refusal : res.body.message]).toEqual([
          name,
          403,
          refusal,
        ])
      }
      // A key of before scopes is full: past the scope check on every route (no 401, no 403).
      const full = await call(
        secrets.k1,
        route.method,
        path.replace('/alice', '/nobody'),
        bodyOf(route.method),
      )
      expect([name, full.status === 401 || full.status === 403]).toEqual([name, false])
    }
  })

  it('tells a verifier key of an unknown path 404, as any key', async () => {
    for (const key of [verifierSecret, secrets.k1]) {
      const res = await call(key, 'POST', '/admin/v1/nothing-here', {})
      expect([res.status, res.body]).toEqual([404, { message: 'Not found' }])
    }
  })

  it('stops start-up when an admin route declares no scope', async () => {
    const app = Fastify()
    app.register(async (admin) => {
      operatorScopesDeclared(admin, [])
      admin.get('/declared', { config: { operatorScope: 'verifier' } }, async () => ({}))
      admin.get('/undeclared', async () => ({}))
    })
    await expect(app.ready()).rejects.toThrow(
      'GET /undeclared declares no operator scope (config.operatorScope: admin or verifier)',
    )
  })
})

describe('reporter names', () => {
  const row = (token: string, valid: number) => ({
    minute: '2026-11-22T11:59:00.000Z',
    account: 'alice',
    token,
    outcomes: { valid },
  })

  it("are the key's own: another key's empty batches under the same name and batch ids leave the real ones counted, leases returned", async () => {
    const token = h.alice.defaultToken.id
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 100 })
    const lease = await call(verifierSecret, 'POST', '/admin/v1/credits/leases', {
      account: 'alice',
      want: 50,
    })
    expect(lease.body.granted).toBe(50)
    const send = (key: string, batch: string, body: object) =>
      call(key, 'POST', '/admin/v1/usage/reports', { reporter: 'edge-1', batch, ...body })

    expect((await send(verifierSecret, 'r7:1', { counts: [row(token, 3)] })).body).toEqual({
      counted: true,
    })
    // Another verifier's key, under edge-1's name, ahead of its next batches: counted as its own.
    for (const batch of ['r7:2', 'r7:3']) {
      expect((await send(otherVerifierSecret, batch, { counts: [] })).body).toEqual({
        counted: true,
      })
    }
    const real = {
      counts: [row(token, 4)],
      returned: [{ account: 'alice', amount: 20, lease: lease.body.lease }],
    }
    expect((await send(verifierSecret, 'r7:2', real)).body).toEqual({ counted: true })
    expect((await send(verifierSecret, 'r7:3', { counts: [row(token, 5)] })).body).toEqual({
      counted: true,
    })
    // Still once per batch for the key's own reporter.
    expect((await send(verifierSecret, 'r7:2', real)).body).toEqual({ counted: false })
    // A name of the longest kind, with the key's id before it, is kept whole (and once).
    const long = { reporter: 'e'.repeat(64), batch: 'b'.repeat(64), counts: [] }
    for (const counted of [true, false]) {
      const res = await call(verifierSecret, 'POST', '/admin/v1/usage/reports', long)
      expect(res.body).toEqual({ counted })
    }

    await h.ctx.usage.flush()
    const minute = await h.ctx.db
      .selectFrom('usage_minutes')
      .select('valid')
      .where('token_id', '=', token)
      .executeTakeFirstOrThrow()
    expect(Number(minute.valid)).toBe(12)
    // 100 - 50 leased + 20 returned.
    expect((await h.ctx.credits.get({ account: 'alice' }))?.remaining).toBe(70)
  })
})
