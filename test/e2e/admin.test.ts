import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'
import { api } from './client.js'
import { type ServerProcess, startServer, tessera } from './server.js'

/**
 * The admin API over HTTPS against the built server, with operator keys made and revoked by the
 * `tessera` command while the server runs.
 */

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)

interface Answer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes
  body: any
  headers: Record<string, string | string[] | undefined>
}

function adminCall(
  server: ServerProcess,
  key: string | undefined,
  method: string,
  route: string,
  body?: unknown,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${route}`,
      { method, ca: readFileSync(server.certFile), agent: false },
      (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => {
          const json = res.headers['content-type']?.startsWith('application/json')
          resolve({
            status: res.statusCode ?? 0,
            body: json && text !== '' ? JSON.parse(text) : text,
            headers: res.headers,
          })
        })
      },
    )
    req.on('error', reject)
    if (key !== undefined) req.setHeader('authorization', `Bearer ${key}`)
    if (body !== undefined) req.setHeader('content-type', 'application/json')
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

/** `tessera` expected to fail: its exit status and stderr. */
async function refused(env: NodeJS.ProcessEnv, ...args: string[]) {
  try {
    await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], {
      env: childEnv(env),
      cwd: env.DATA_DIR,
    })
    return { code: 0, stderr: '' }
  } catch (err) {
    const e = err as { code: number; stderr: string }
    return { code: e.code, stderr: e.stderr }
  }
}

const retrieve = async (server: ServerProcess, token: string) =>
  (await api(server, 'GET', '/tokens/v2', token)).body.code

describe('the admin API over HTTPS, with keys kept in DATA_DIR', () => {
  let server: ServerProcess
  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(() => server.stop())

  it('works with a key made by the CLI while the server runs, and stops when it is revoked', async () => {
    expect(await adminCall(server, undefined, 'GET', '/admin/v1/accounts')).toMatchObject({
      status: 401,
      body: { message: 'Unauthorized' },
    })
    const made = await tessera(
      server.env,
      'admin-key',
      'create',
      '--scope',
      'admin',
      '--note',
      'backend',
    )
    expect(Object.keys(made)).toEqual(['id', 'key', 'scope', 'created'])
    expect(made.key).toMatch(new RegExp(`^tsa_${made.id}_[A-Za-z0-9_-]{43}$`))

    const created = await adminCall(server, made.key, 'POST', '/admin/v1/accounts', {
      username: 'e2e',
      features: ['navigation'],
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ username: 'e2e', plan: 'standard', disabled: false })
    const origin = server.url
    expect(created.body.setupUrl.startsWith(`${origin}/account/setup/`)).toBe(true)
    const setup = await adminCall(server, undefined, 'GET', new URL(created.body.setupUrl).pathname)
    expect(setup.status).toBe(200)
    const pk = created.body.defaultToken.token
    expect(await retrieve(server, pk)).toBe('TokenValid')

    const disabled = await adminCall(server, made.key, 'POST', '/admin/v1/accounts/e2e/disable')
    expect([disabled.status, disabled.body.disabled]).toEqual([200, true])
    expect(await retrieve(server, pk)).toBe('TokenRevoked')
    await adminCall(server, made.key, 'POST', '/admin/v1/accounts/e2e/enable')
    expect(await retrieve(server, pk)).toBe('TokenValid')

    const page = await adminCall(server, made.key, 'GET', '/admin/v1/accounts?limit=1')
    expect(page.body.map((a: { username: string }) => a.username)).toEqual(['e2e'])
    expect(page.headers.link).toBeUndefined()
    const tokens = await adminCall(server, made.key, 'GET', '/admin/v1/accounts/e2e/tokens')
    // Last use is written at the next minute boundary: none until then, else a whole minute.
    expect(tokens.body).toMatchObject([{ default: true }])
    expect(String(tokens.body[0].lastUsed)).toMatch(/^(null|\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z)$/)
    const audit = await adminCall(server, made.key, 'GET', '/admin/v1/audit?limit=2')
    expect(audit.body.map((e: { action: string }) => e.action)).toEqual([
      'account.enabled',
      'account.disabled',
    ])
    expect(audit.body[0].actor).toEqual({ type: 'admin', id: made.id })
    expect(audit.headers.link).toBe(
      `<${origin}/admin/v1/audit?limit=2&start=${audit.body[1].id}>; rel="next"`,
    )
    const doc = await api(server, 'GET', '/openapi.json')
    expect(doc.body.paths['/admin/v1/accounts'].post.tags).toEqual(['admin'])

    expect(await tessera(server.env, 'admin-key', 'list')).toEqual([
      { id: made.id, scope: 'admin', created: made.created, note: 'backend' },
    ])
    const revoked = await tessera(server.env, 'admin-key', 'revoke', made.id)
    expect(revoked).toEqual({ id: made.id, revoked: expect.stringMatching(/Z$/) })
    expect(await adminCall(server, made.key, 'GET', '/admin/v1/accounts')).toMatchObject({
      status: 401,
      body: { message: 'Unauthorized' },
    })
    expect(await refused(server.env, 'admin-key', 'revoke', 'nosuchkey')).toEqual({
      code: 1,
      stderr: 'tessera: no such admin key: nosuchkey\n',
    })
  })

  it('refuses a verifier-scoped key of the CLI with 403 on accounts, portal links, roll, credits and the audit log; it introspects', async () => {
    const ops = await tessera(server.env, 'admin-key', 'create', '--scope', 'admin')
    const edge = await tessera(
      server.env,
      'admin-key',
      'create',
      '--scope',
      'verifier',
      '--note',
      'edge',
    )
    expect(edge).toMatchObject({ scope: 'verifier', key: expect.stringMatching(/^tsa_/) })
    expect(await refused(server.env, 'admin-key', 'create', '--scope', 'root')).toEqual({
      code: 1,
      stderr:
        'tessera: admin-key create needs --scope verifier (introspection, leases, usage reports ' +
        'and the event stream: for @tessera/verifier) or --scope admin (every route); not root\n',
    })
    const account = await adminCall(server, ops.key, 'POST', '/admin/v1/accounts', {
      username: 'scoped',
    })
    expect(account.status).toBe(201)
    const token = account.body.defaultToken
    for (const [method, route, body] of [
      ['POST', '/admin/v1/accounts', { username: 'mallory' }],
      ['POST', '/admin/v1/accounts/scoped/portal-links', { email: 'm@example.com', role: 'owner' }],
      ['POST', `/admin/v1/accounts/scoped/tokens/${token.id}/roll`, {}],
      ['PUT', '/admin/v1/accounts/scoped/credits', { remaining: 1000 }],
      ['GET', '/admin/v1/audit', undefined],
      ['DELETE', '/admin/v1/accounts/scoped', undefined],
    ] as const) {
      const res = await adminCall(server, edge.key, method, route, body)
      expect([route, res.status, res.body]).toEqual([
        route,
        403,
        {
          message: "the operator key's scope does not allow this",
          details: `key ${edge.id} has the verifier scope; ${method} ${route.replace(token.id, ':token_id').replace('/scoped', '/:username')} needs the admin scope`,
        },
      ])
    }
    const introspected = await adminCall(server, edge.key, 'POST', '/admin/v1/introspect', {
      token: token.token,
    })
    expect([introspected.status, introspected.body.active]).toEqual([200, true])
    expect(await retrieve(server, token.token)).toBe('TokenValid')
    await tessera(server.env, 'admin-key', 'revoke', ops.id)
    await tessera(server.env, 'admin-key', 'revoke', edge.id)
  })

  it('prints the audit log with tessera audit, with the CLI changes recorded', async () => {
    const rotated = await tessera(server.env, 'keys', 'rotate')
    const made = await tessera(server.env, 'admin-key', 'create', '--scope', 'verifier')
    await tessera(server.env, 'admin-key', 'revoke', made.id)
    const events = await tessera(
      server.env,
      'audit',
      '--action',
      'admin_key.created,admin_key.revoked,signing_key.added',
      '--limit',
      '3',
    )
    expect(events.map((e: { action: string; target: unknown; actor: unknown }) => e)).toMatchObject(
      [
        {
          action: 'admin_key.revoked',
          actor: { type: 'cli' },
          target: { type: 'admin_key', id: made.id },
        },
        {
          action: 'admin_key.created',
          actor: { type: 'cli' },
          target: { type: 'admin_key', id: made.id },
          details: { scope: 'verifier' },
        },
        {
          action: 'signing_key.added',
          actor: { type: 'cli' },
          target: { type: 'signing_key', id: rotated.id },
        },
      ],
    )
    const own = await tessera(server.env, 'audit', 'e2e', '--action', 'account.created')
    expect(own).toMatchObject([
      { action: 'account.created', account: 'e2e', actor: { type: 'admin' } },
    ])
    expect(await tessera(server.env, 'audit', 'e2e', '--since', '2999-01-01')).toEqual([])
    expect(await refused(server.env, 'audit', '--action', 'nope')).toEqual({
      code: 1,
      stderr: 'tessera: resources are invalid: no such action: nope\n',
    })
    expect(await refused(server.env, 'audit', '--limit', '0')).toEqual({
      code: 1,
      stderr: 'tessera: limit must be an integer between 1 and 100\n',
    })
  })
})

describe('operator keys given in ADMIN_KEYS', () => {
  it('admin-key create prints the new ADMIN_KEYS value; the server started with it takes the key', async () => {
    const first = `ops:${'s'.repeat(40)}`
    const DATA_DIR = mkdtempSync(path.join(tmpdir(), 'tessera-admin-'))
    const env = { DATA_DIR, ADMIN_KEYS: first }
    const made = await tessera(env, 'admin-key', 'create', '--scope', 'admin')
    // Nothing is stored: the environment is the list.
    expect(readdirSync(DATA_DIR)).toEqual([])
    expect(Object.keys(made)).toEqual(['id', 'key', 'scope', 'created', 'ADMIN_KEYS'])
    expect(made.ADMIN_KEYS).toBe(`${first},${made.id}:${made.key}`)
    const edge = await tessera(env, 'admin-key', 'create', '--scope', 'verifier')
    expect(edge.ADMIN_KEYS).toBe(`${first},${edge.id}@verifier:${edge.key}`)
    expect(await refused(env, 'admin-key', 'create')).toEqual({
      code: 1,
      stderr:
        'tessera: admin-key create needs --scope verifier (introspection, leases, usage reports ' +
        'and the event stream: for @tessera/verifier) or --scope admin (every route)\n',
    })
    const ADMIN_KEYS = `${made.ADMIN_KEYS},${edge.id}@verifier:${edge.key}`
    const server = await startServer({ ADMIN_KEYS })
    try {
      const answer = await adminCall(server, made.key, 'GET', '/admin/v1/accounts')
      expect([answer.status, answer.body]).toEqual([200, []])
      expect((await adminCall(server, 's'.repeat(40), 'GET', '/admin/v1/accounts')).status).toBe(
        200,
      )
      expect(await tessera(server.env, 'admin-key', 'list')).toEqual([
        { id: 'ops', scope: 'admin' },
        { id: made.id, scope: 'admin' },
        { id: edge.id, scope: 'verifier' },
      ])
      expect(await adminCall(server, edge.key, 'GET', '/admin/v1/accounts')).toMatchObject({
        status: 403,
        body: { message: "the operator key's scope does not allow this" },
      })
      expect(await refused(server.env, 'admin-key', 'revoke', 'ops')).toEqual({
        code: 1,
        stderr: 'tessera: ADMIN_KEYS is set: change it on every instance instead\n',
      })
    } finally {
      await server.stop()
    }
  })
})
