import type { FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { generateSelfSigned } from '../../src/tls/self-signed.js'
import { type Harness, harness } from '../helpers.js'
import { adminEnv, secrets } from './admin-client.js'

/**
 * The headers the independent tools grade (Mozilla's HTTP Observatory, RFC 6750, CORS): HSTS on
 * every answer a client reached over HTTPS, `nosniff` on every JSON answer, the admin API's
 * challenge and no CORS there. Over a real TLS socket: test/e2e/headers-standards.test.ts.
 */

let h: Harness | undefined
let tls: FastifyInstance | undefined
afterEach(async () => {
  await tls?.close()
  tls = undefined
  await h?.close()
  h = undefined
})

const hsts = 'max-age=63072000'
const cors = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers':
    'Link, X-Rate-Limit-Interval, X-Rate-Limit-Limit, X-Rate-Limit-Reset, RateLimit-Policy, RateLimit, Retry-After',
}

/** The app of `h`'s context, built as the server builds it over TLS. */
function overTls(harnessed: Harness): FastifyInstance {
  const { cert, key } = generateSelfSigned()
  tls = buildApp(harnessed.ctx, { https: { cert: Buffer.from(cert), key: Buffer.from(key) } })
  return tls
}

/** Answers of every kind: the token API (fast path's and route's), admin, pages, errors. */
const answers = (s: Harness) => {
  const pk = s.alice.defaultToken.token as string
  return [
    ['GET', `/tokens/v2?access_token=${pk}`, {}, 200],
    ['GET', `/tokens/v2/${s.alice.username}?access_token=${pk}`, {}, 404],
    ['GET', '/tokens/v2/alice', {}, 401],
    ['POST', `/tokens/v2/alice?access_token=${pk}`, { 'content-type': 'application/json' }, 404],
    ['GET', '/no-such-path', {}, 404],
    ['GET', '/openapi.json', {}, 200],
    ['GET', '/healthz', {}, 200],
    ['GET', '/admin/v1/accounts/alice', { authorization: `Bearer ${secrets.k1}` }, 200],
    ['GET', '/admin/v1/accounts/alice', {}, 401],
    ['GET', '/account/sign-in', {}, 200],
    ['GET', '/account/no-such-page', {}, 404],
    ['GET', '/docs', {}, 200],
    ['GET', '/', {}, 302],
  ] as const
}

describe('HSTS', () => {
  it('is on every answer over TLS: token API, admin API, dashboard, /docs, errors', async () => {
    h = await harness(adminEnv)
    const app = overTls(h)
    for (const [method, url, headers, status] of answers(h)) {
      const res = await app.inject({ method, url, headers })
      expect([url, res.statusCode, res.headers['strict-transport-security']]).toEqual([
        url,
        status,
        hsts,
      ])
      expect([url, res.headers['x-content-type-options']]).toEqual([url, 'nosniff'])
    }
  })

  it('is on every answer behind TRUST_PROXY, where the proxy terminated TLS', async () => {
    h = await harness({ ...adminEnv, TRUST_PROXY: '1' })
    for (const [method, url, headers, status] of answers(h)) {
      const res = await h.app.inject({
        method,
        url,
        headers: { ...headers, 'x-forwarded-proto': 'https' },
      })
      expect([url, res.statusCode, res.headers['strict-transport-security']]).toEqual([
        url,
        status,
        hsts,
      ])
    }
  })

  it('is not sent by an app that serves plain HTTP itself', async () => {
    h = await harness(adminEnv)
    for (const [method, url, headers, status] of answers(h)) {
      const res = await h.app.inject({ method, url, headers })
      expect([url, res.statusCode, res.headers['strict-transport-security']]).toEqual([
        url,
        status,
        undefined,
      ])
    }
  })
})

describe('X-Content-Type-Options', () => {
  it('is nosniff on every JSON answer: token API, admin API, documents, probes, errors', async () => {
    h = await harness(adminEnv)
    for (const [method, url, headers] of answers(h)) {
      const res = await h.app.inject({ method, url, headers })
      expect([url, res.headers['x-content-type-options']]).toEqual([url, 'nosniff'])
    }
  })
})

describe('the admin API (RFC 6750, no CORS)', () => {
  const challenge = 'Bearer realm="admin"'
  const refused = 'Bearer realm="admin", error="invalid_token"'

  it.each([
    ['no Authorization header', undefined, challenge],
    ['another scheme', `Basic ${secrets.k1}`, challenge],
    ['an empty bearer', 'Bearer ', challenge],
    ['a wrong key', 'Bearer not-a-key', refused],
    ['a key with one character changed', `Bearer ${secrets.k1.slice(0, -1)}_`, refused],
  ])(
    'answers 401 with %s and the challenge RFC 6750 section 3.1 gives',
    async (_what, authorization, expected) => {
      h = await harness(adminEnv)
      const res = await h.app.inject({
        method: 'GET',
        url: '/admin/v1/accounts/alice',
        headers: authorization === undefined ? {} : { authorization },
      })
      expect(res.statusCode).toBe(401)
      expect(res.json()).toEqual({ message: 'Unauthorized' })
      expect(res.headers['www-authenticate']).toBe(expected)
    },
  )

  it('answers no CORS headers: answers, refusals, unknown paths and preflights', async () => {
    h = await harness(adminEnv)
    const key = { authorization: `Bearer ${secrets.k1}` }
    const preflight = {
      origin: 'https://app.example.com',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    }
    const requests = [
      ['GET', '/admin/v1/accounts/alice', key, 200],
      ['GET', '/admin/v1/accounts/alice', { origin: 'https://app.example.com' }, 401],
      ['GET', '/admin/v1/no-such-route', key, 404],
      ['POST', '/admin/v1/accounts', { ...key, 'content-type': 'application/json' }, 422],
      ['OPTIONS', '/admin/v1/accounts', preflight, 204],
      ['OPTIONS', '//admin/v1/accounts', preflight, 204],
    ] as const
    for (const [method, url, headers, status] of requests) {
      const res = await h.app.inject({ method, url, headers })
      const named = Object.keys(res.headers).filter((name) => name.startsWith('access-control-'))
      expect([method, url, res.statusCode, named]).toEqual([method, url, status, []])
    }
  })

  it('is refused early (HTTPS required behind a proxy) without CORS too', async () => {
    h = await harness({ ...adminEnv, TRUST_PROXY: '1' })
    const res = await h.app.inject({ method: 'GET', url: '/admin/v1/accounts/alice' })
    expect(res.statusCode).toBe(403)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
    expect(res.headers['strict-transport-security']).toBe(hsts)
  })

  it('leaves the token API its CORS, preflight included', async () => {
    h = await harness(adminEnv)
    const pk = h.alice.defaultToken.token as string
    const res = await h.app.inject({ method: 'GET', url: `/tokens/v2?access_token=${pk}` })
    expect(res.headers).toMatchObject(cors)
    const preflight = await h.app.inject({
      method: 'OPTIONS',
      url: '/tokens/v2/alice',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    })
    expect(preflight.statusCode).toBe(204)
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
    })
  })
})
