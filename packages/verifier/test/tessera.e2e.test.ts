import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { request } from 'node:https'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ServerProcess, startServer, tessera } from '../../../test/e2e/server.js'
import { createVerifier, type Verifier } from '../src/index.js'

/** The verifier against a real Tessera over TLS: introspection, the event stream, outages. */

/** The verifier holds a key of the `verifier` scope only, as its docs ask; `ops` is the operator's. */
const adminKey = `verifier-e2e-${randomBytes(24).toString('base64url')}`
const opsKey = `operator-e2e-${randomBytes(24).toString('base64url')}`
const adminEnv = {
  ADMIN_KEYS: `vf@verifier:${adminKey},ops:${opsKey}`,
  RATE_LIMIT_PER_MINUTE: '100000',
}

interface Answer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes
  body: any
}

/** A request to the server; `auth` is an access token (query) or `{admin: true}`. */
function call(
  server: ServerProcess,
  method: string,
  route: string,
  auth: string | { admin: true },
  body?: unknown,
): Promise<Answer> {
  const admin = typeof auth !== 'string'
  const url = admin
    ? `${server.url}${route}`
    : `${server.url}${route}${route.includes('?') ? '&' : '?'}access_token=${auth}`
  const headers: Record<string, string> = admin ? { authorization: `Bearer ${opsKey}` } : {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, ca: readFileSync(server.certFile) }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: text === '' ? undefined : JSON.parse(text) }),
      )
    })
    req.on('error', reject)
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

const verifierFor = (server: ServerProcess, staleForMs?: number) =>
  createVerifier({
    url: server.url,
    adminKey,
    ca: readFileSync(server.certFile),
    ...(staleForMs === undefined ? {} : { staleForMs }),
    onError: () => {},
  })

/** Polls (letting I/O run) until `done`, answering the ms it took; fails past `limitMs`. */
async function within(limitMs: number, done: () => boolean): Promise<number> {
  const started = performance.now()
  while (!done()) {
    if (performance.now() - started > limitMs) throw new Error(`not within ${limitMs} ms`)
    await new Promise((r) => setTimeout(r, 1))
  }
  return performance.now() - started
}

let server: ServerProcess
let verifier: Verifier
let sk: string

const create = async (body: Record<string, unknown>) => {
  const res = await call(server, 'POST', '/tokens/v2/acme', sk, body)
  expect(res.status).toBe(200)
  return res.body as { id: string; token: string }
}

beforeAll(async () => {
  server = await startServer(adminEnv)
  await tessera(server.env, 'account', 'create', 'acme')
  await tessera(server.env, 'account', 'create', 'globex')
  sk = (
    await tessera(
      server.env,
      'token',
      'create',
      'acme',
      '--note',
      'verifier',
      '--scopes',
      'tokens:read,tokens:write,styles:read,styles:write',
    )
  ).token
  verifier = verifierFor(server)
  await verifier.ready()
})

afterAll(async () => {
  verifier?.close()
  await server?.stop()
})

describe('@tessera/verifier against Tessera', () => {
  it('verifies pk, sk and tk with their account, usage and scopes', async () => {
    const pk = await create({ scopes: ['styles:read'], note: 'pk' })
    const expires = new Date(Date.now() + 30 * 60_000).toISOString()
    const tk = (
      await call(server, 'POST', '/tokens/v2/acme', sk, { expires, scopes: ['styles:read'] })
    ).body.token as string

    expect(await verifier.verify(pk.token, { scope: 'styles:read' })).toMatchObject({
      valid: true,
      account: 'acme',
      usage: 'pk',
      id: pk.id,
      scopes: ['styles:read'],
      allowedUrls: undefined,
    })
    expect(await verifier.verify(sk, { scope: ['tokens:write', 'styles:write'] })).toMatchObject({
      valid: true,
      usage: 'sk',
    })
    const tkAnswer = await verifier.verify(tk, { scope: 'styles:read' })
    expect(tkAnswer).toMatchObject({ valid: true, usage: 'tk', account: 'acme', id: undefined })
    expect(tkAnswer.valid && tkAnswer.exp).toBe(Math.floor(Date.parse(expires) / 1000))

    expect(await verifier.verify(pk.token, { scope: 'styles:write' })).toEqual({
      valid: false,
      reason: 'MissingScope',
    })
    expect(await verifier.verify(tk, { scope: 'tokens:read' })).toEqual({
      valid: false,
      reason: 'MissingScope',
    })
    // Cached from here: the same frozen answer, synchronously.
    expect(verifier.verifyCached(pk.token, { scope: 'styles:read' })?.valid).toBe(true)
  })

  it('gives a pk or sk its end of life (expiresAt) as exp, and TokenExpired from then on', async () => {
    const ends = Date.now() + 2_500
    const pk = await create({ scopes: ['styles:read'], expiresAt: new Date(ends).toISOString() })
    const answer = await verifier.verify(pk.token, { scope: 'styles:read' })
    expect(answer).toMatchObject({ valid: true, usage: 'pk', id: pk.id })
    expect(answer.valid && answer.exp).toBe(Math.floor(ends / 1000))
    await new Promise((r) => setTimeout(r, ends - Date.now() + 50))
    // The cached answer is dropped at its exp; Tessera says the token has ended.
    expect(await verifier.verify(pk.token, { scope: 'styles:read' })).toEqual({
      valid: false,
      reason: 'TokenExpired',
    })
  })

  it('answers the retrieve codes of bad tokens', async () => {
    const { token } = await create({ scopes: ['styles:read'] })
    const [usage, payload, signature] = token.split('.')
    const forged = `${usage}.${payload}.${signature?.startsWith('A') ? 'B' : 'A'}${signature?.slice(1)}`
    expect(await verifier.verify(forged)).toEqual({ valid: false, reason: 'TokenInvalid' })
    expect(await verifier.verify('pk.bm90IGpzb24.AAAA')).toEqual({
      valid: false,
      reason: 'TokenMalformed',
    })
    expect(await verifier.verify('nonsense')).toEqual({ valid: false, reason: 'TokenMalformed' })
  })

  it('holds a token to its allowed URLs (the forms of the contract)', async () => {
    const { token } = await create({
      scopes: ['styles:read'],
      allowedUrls: [
        'https://app.example.com',
        '*.maps.example.com',
        'localhost:3000',
        'docs.example.com/maps',
      ],
    })
    const cases: Array<[string | undefined, string | undefined, boolean]> = [
      ['https://app.example.com', undefined, true],
      ['http://app.example.com', undefined, false],
      ['https://a.maps.example.com', undefined, true],
      ['https://maps.example.com', undefined, false],
      ['http://localhost:3000', undefined, true],
      ['http://localhost:3001', undefined, false],
      [undefined, 'https://docs.example.com/maps/world', true],
      [undefined, 'https://docs.example.com/other', false],
      ['https://evil.net', 'https://app.example.com/', false],
      [undefined, undefined, false],
    ]
    for (const [origin, referer, allowed] of cases) {
      const answer = await verifier.verify(token, { origin, referer, scope: 'styles:read' })
      expect([origin, referer, answer.valid ? 'valid' : answer.reason]).toEqual([
        origin,
        referer,
        allowed ? 'valid' : 'UrlNotAllowed',
      ])
    }
  })

  it('sees a deletion within 1 s', async () => {
    const figures: number[] = []
    for (let i = 0; i < 5; i++) {
      const { id, token } = await create({ scopes: ['styles:read'] })
      expect((await verifier.verify(token))?.valid).toBe(true)
      const res = await call(server, 'DELETE', `/tokens/v2/acme/${id}`, sk)
      expect(res.status).toBe(204)
      figures.push(await within(1000, () => verifier.verifyCached(token) === undefined))
      expect(await verifier.verify(token)).toEqual({ valid: false, reason: 'TokenRevoked' })
    }
    const sorted = [...figures].sort((a, b) => a - b)
    process.stdout.write(
      `verifier: a deletion reached the cache ${sorted.map((ms) => ms.toFixed(0)).join(', ')} ms after its 204 (median ${sorted[2]?.toFixed(0)} ms)\n`,
    )
  })

  it("holds a token to its IP ranges: the request's client address", async () => {
    const { token } = await create({
      scopes: ['styles:read'],
      allowedIps: ['203.0.113.0/24', '2001:db8::/32'],
    })
    const cases: [string | undefined, boolean][] = [
      ['203.0.113.20', true],
      ['::ffff:203.0.113.20', true],
      ['2001:db8::1', true],
      ['198.51.100.1', false],
      [undefined, false],
    ]
    for (const [ip, valid] of cases) {
      const answer = await verifier.verify(token, { ip })
      expect(answer, String(ip)).toEqual(
        valid
          ? expect.objectContaining({
              valid: true,
              allowedIps: ['203.0.113.0/24', '2001:db8::/32'],
            })
          : { valid: false, reason: 'IpNotAllowed' },
      )
    }
  })

  it('sees a roll within 1 s: the old string until its end, then refused', async () => {
    const { id, token } = await create({ scopes: ['styles:read'] })
    expect((await verifier.verify(token))?.valid).toBe(true)
    // The old string works 2 s more: the verifier learns its end and keeps it no longer.
    const expires = new Date(Date.now() + 2000).toISOString()
    const rolled = await call(server, 'POST', `/tokens/v2/acme/${id}/roll`, sk, { expires })
    expect(rolled.status).toBe(200)
    await within(1000, () => verifier.verifyCached(token) === undefined)
    expect((await verifier.verify(token))?.valid).toBe(true)
    expect((await verifier.verify(rolled.body.token))?.valid).toBe(true)
    await new Promise((r) => setTimeout(r, Date.parse(expires) - Date.now() + 50))
    expect(await verifier.verify(token)).toEqual({ valid: false, reason: 'TokenRevoked' })
    // Rolled to end now: refused within 1 s.
    const again = await call(server, 'POST', `/tokens/v2/acme/${rolled.body.id}/roll`, sk)
    expect(again.status).toBe(200)
    await within(1000, () => verifier.verifyCached(rolled.body.token) === undefined)
    expect(await verifier.verify(rolled.body.token)).toEqual({
      valid: false,
      reason: 'TokenRevoked',
    })
  })

  it('sees a change of scopes or URLs, and an account disabled or enabled, within 1 s', async () => {
    const { id, token } = await create({ scopes: ['styles:read'] })
    expect((await verifier.verify(token, { scope: 'styles:read' }))?.valid).toBe(true)
    await call(server, 'PATCH', `/tokens/v2/acme/${id}`, sk, { allowedUrls: ['example.com'] })
    await within(1000, () => verifier.verifyCached(token) === undefined)
    expect(await verifier.verify(token)).toEqual({ valid: false, reason: 'UrlNotAllowed' })
    expect((await verifier.verify(token, { origin: 'https://example.com' }))?.valid).toBe(true)

    const other = (
      await tessera(
        server.env,
        'token',
        'create',
        'globex',
        '--note',
        'test',
        '--scopes',
        'styles:read',
      )
    ).token
    expect((await verifier.verify(other))?.valid).toBe(true)
    expect((await verifier.verify(sk))?.valid).toBe(true)
    expect(
      (await call(server, 'POST', '/admin/v1/accounts/acme/disable', { admin: true })).status,
    ).toBe(200)
    await within(1000, () => verifier.verifyCached(sk) === undefined)
    expect(await verifier.verify(sk)).toEqual({ valid: false, reason: 'TokenRevoked' })
    expect(verifier.verifyCached(other)?.valid).toBe(true)
    expect(
      (await call(server, 'POST', '/admin/v1/accounts/acme/enable', { admin: true })).status,
    ).toBe(200)
    await within(1000, () => verifier.verifyCached(sk) === undefined)
    expect((await verifier.verify(sk))?.valid).toBe(true)
  })
})

describe('@tessera/verifier with Tessera stopped', () => {
  it('serves cached answers within the bound, then refuses; unknown tokens at once', async () => {
    const own = await startServer(adminEnv)
    const staleForMs = 1500
    const v = verifierFor(own, staleForMs)
    try {
      await v.ready()
      await tessera(own.env, 'account', 'create', 'acme')
      const known = (
        await tessera(
          own.env,
          'token',
          'create',
          'acme',
          '--note',
          'test',
          '--scopes',
          'styles:read',
        )
      ).token
      const unknown = (
        await tessera(
          own.env,
          'token',
          'create',
          'acme',
          '--note',
          'test',
          '--scopes',
          'styles:read',
        )
      ).token
      expect((await v.verify(known, { scope: 'styles:read' }))?.valid).toBe(true)

      // Timed from before the stop: the verifier's clock starts when the stream ends, during
      // the stop, however long the server then takes to exit.
      const stoppingAt = performance.now()
      await own.stop()
      expect(await v.verify(unknown)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
      expect(v.verifyCached(known, { scope: 'styles:read' })?.valid).toBe(true)
      await within(staleForMs + 1000, () => v.verifyCached(known) === undefined)
      const served = performance.now() - stoppingAt
      process.stdout.write(
        `verifier: with Tessera stopped, a cached answer served for ${served.toFixed(0)} ms (bound ${staleForMs} ms)\n`,
      )
      expect(served).toBeGreaterThan(staleForMs - 300)
      expect(await v.verify(known)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    } finally {
      v.close()
      await own.stop()
    }
  })
})

describe('the example API (examples/verifier-api)', () => {
  const root = path.resolve(import.meta.dirname, '../../..')
  let child: import('node:child_process').ChildProcess
  let fastifyUrl: string
  let middlewareUrl: string

  beforeAll(async () => {
    // The example imports the package by name: build it from these sources first.
    await promisify(execFile)(process.execPath, [
      path.join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      path.join(root, 'packages/verifier/tsconfig.json'),
    ])
    const { spawn } = await import('node:child_process')
    child = spawn(process.execPath, [path.join(root, 'examples/verifier-api/server.js')], {
      env: {
        ...process.env,
        TESSERA_URL: server.url,
        TESSERA_ADMIN_KEY: adminKey,
        TESSERA_CA: server.certFile,
        PORT: '0',
        MIDDLEWARE_PORT: '0',
      },
    })
    let out = ''
    child.stderr?.on('data', (d) => {
      out += d
    })
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (d) => {
        out += d
        const f = /fastify API on (\S+)/.exec(out)
        const m = /middleware API on (\S+)/.exec(out)
        if (f?.[1] && m?.[1]) {
          fastifyUrl = f[1]
          middlewareUrl = m[1]
          resolve()
        }
      })
      child.once('exit', (code) => reject(new Error(`example exited with ${code}:\n${out}`)))
    })
  })

  afterAll(() => {
    child?.kill('SIGTERM')
  })

  const get = async (
    url: string,
    token?: string,
    headers: Record<string, string> = {},
    method = 'GET',
  ) => {
    const res = await fetch(url, {
      method,
      headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` },
    })
    return { status: res.status, body: await res.json() }
  }

  it('serves the plugin and the middleware with the same answers', async () => {
    const reader = await create({ scopes: ['styles:read'] })
    const none = await create({ scopes: ['tokens:read'] })
    const restricted = await create({
      scopes: ['styles:read'],
      allowedUrls: ['https://app.example.com'],
    })
    const revoked = await create({ scopes: ['styles:read'] })
    await call(server, 'DELETE', `/tokens/v2/acme/${revoked.id}`, sk)

    for (const base of [fastifyUrl, middlewareUrl]) {
      const styles = `${base}/styles`
      expect(await get(styles, reader.token)).toEqual({
        status: 200,
        body: { styles: ['streets', 'outdoors'], account: 'acme' },
      })
      expect(await get(`${styles}?access_token=${reader.token}`)).toMatchObject({ status: 200 })
      expect(await get(styles)).toEqual({
        status: 401,
        body: { message: 'Unauthorized', details: 'an access token is required' },
      })
      expect(await get(styles, revoked.token)).toMatchObject({
        status: 401,
        body: { message: 'Unauthorized' },
      })
      expect(await get(styles, 'pk.garbage')).toMatchObject({ status: 401 })
      expect(await get(styles, none.token)).toMatchObject({
        status: 403,
        body: { message: 'Forbidden' },
      })
      expect(await get(styles, restricted.token)).toMatchObject({ status: 403 })
      expect(
        await get(styles, restricted.token, { origin: 'https://app.example.com' }),
      ).toMatchObject({
        status: 200,
      })
      expect(
        await get(styles, restricted.token, { origin: 'https://evil.example.com' }),
      ).toMatchObject({
        status: 403,
      })
    }
    // Fastify routes: one open, one with a scope of its own.
    expect(await get(`${fastifyUrl}/healthz`)).toEqual({ status: 200, body: { ok: true } })
    expect(await get(`${fastifyUrl}/styles`, reader.token, {}, 'POST')).toMatchObject({
      status: 403,
    })
    expect(await get(`${fastifyUrl}/styles`, sk, {}, 'POST')).toEqual({
      status: 201,
      body: { created: true, account: 'acme' },
    })
  })
})
