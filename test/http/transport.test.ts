import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { redactUrl } from '../../src/http/redact.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const reset = String(Math.floor(T0 / 60_000) * 60 + 60)

describe('rate limit', () => {
  it('allows the limit per account per minute, then 429 with Retry-After, and resets with the window', async () => {
    h = await harness({ RATE_LIMIT_PER_MINUTE: '3' })
    const sk = await h.token('alice', all)
    h.clock.now = T0 + 15_000
    for (let i = 0; i < 3; i++) {
      const res = await call(h.app, 'GET', '/scopes/v1/alice', sk.token)
      expect(res.status).toBe(200)
      expect(res.headers).toMatchObject({
        'x-rate-limit-interval': '60',
        'x-rate-limit-limit': '3',
        'x-rate-limit-reset': reset,
      })
    }
    const limited = await call(h.app, 'GET', '/tokens/v2/alice', sk.token)
    expect(limited).toMatchObject({ status: 429, body: { message: 'Too Many Requests' } })
    expect(limited.headers).toMatchObject({
      'retry-after': '45',
      'x-rate-limit-reset': reset,
      'x-rate-limit-limit': '3',
    })
    // Another account is counted apart.
    const bobs = await h.token('bob', all)
    expect((await call(h.app, 'GET', '/tokens/v2/bob', bobs.token)).status).toBe(200)
    h.clock.now = T0 + 60_000
    expect((await call(h.app, 'GET', '/tokens/v2/alice', sk.token)).status).toBe(200)
  })

  it('counts requests without a valid token per client address, and still answers 401 first', async () => {
    h = await harness({ RATE_LIMIT_PER_MINUTE: '2' })
    for (let i = 0; i < 4; i++) {
      const res = await call(h.app, 'GET', '/tokens/v2/alice', 'junk')
      expect(res).toMatchObject({ status: 401, body: { message: 'Unauthorized' } })
      expect(res.headers['x-rate-limit-limit']).toBe('2')
    }
    expect(await call(h.app, 'GET', '/tokens/v2', 'junk')).toMatchObject({
      status: 429,
      body: { message: 'Too Many Requests' },
    })
  })
})

describe('CORS', () => {
  it('allows any origin and exposes Link and the rate-limit headers', async () => {
    h = await harness()
    const res = await call(h.app, 'GET', '/tokens/v2', 'x')
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['access-control-expose-headers']).toBe(
      'Link, X-Rate-Limit-Interval, X-Rate-Limit-Limit, X-Rate-Limit-Reset, RateLimit-Policy, RateLimit, Retry-After',
    )
  })

  it('answers a preflight', async () => {
    h = await harness()
    const res = await h.app.inject({
      method: 'OPTIONS',
      url: '/tokens/v2/alice',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    })
    expect(res.statusCode).toBe(204)
    expect(res.headers).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
      'access-control-allow-headers': 'content-type',
    })
  })
})

describe('TRUST_PROXY', () => {
  it('refuses requests not forwarded as https with 403', async () => {
    h = await harness({ TRUST_PROXY: '1' })
    const plain = await h.app.inject({
      method: 'GET',
      url: '/tokens/v2?access_token=x',
      headers: { 'x-forwarded-proto': 'http' },
    })
    expect(plain.statusCode).toBe(403)
    expect(plain.json()).toEqual({ message: 'HTTPS is required' })
    const none = await h.app.inject({ method: 'GET', url: '/tokens/v2?access_token=x' })
    expect(none.statusCode).toBe(403)
    const https = await h.app.inject({
      method: 'GET',
      url: '/tokens/v2?access_token=x',
      headers: { 'x-forwarded-proto': 'https' },
    })
    expect(https.statusCode).toBe(200)
    expect(https.json()).toEqual({ code: 'TokenMalformed' })
  })
})

describe('routes', () => {
  it('treats /tokens/v2 and /tokens/v2/ alike and never redirects', async () => {
    h = await harness()
    for (const url of ['/tokens/v2?access_token=x', '/tokens/v2/?access_token=x']) {
      const res = await h.app.inject({ method: 'GET', url })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({ code: 'TokenMalformed' })
    }
  })

  it('answers unknown paths with 404 JSON', async () => {
    h = await harness()
    const res = await h.app.inject({ method: 'GET', url: '/nope' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ message: 'Not found' })
  })

  it('serves an OpenAPI document generated from the route schemas', async () => {
    h = await harness()
    const res = await h.app.inject({ method: 'GET', url: '/openapi.json' })
    expect(res.statusCode).toBe(200)
    const doc = res.json()
    expect(doc.openapi).toBe('3.1.0')
    // The admin API's paths: test/http/admin.test.ts.
    const tokenApi = Object.keys(doc.paths).filter((p) => !p.startsWith('/admin/v1/'))
    expect(tokenApi.sort()).toEqual([
      '/leaks/v1/github',
      '/leaks/v1/revoke',
      '/scopes/v1/{username}',
      '/tokens/v2',
      '/tokens/v2/{username}',
      '/tokens/v2/{username}/exchange',
      '/tokens/v2/{username}/{token_id}',
      '/tokens/v2/{username}/{token_id}/children',
      '/tokens/v2/{username}/{token_id}/roll',
    ])
    expect(Object.keys(doc.paths['/tokens/v2/{username}']).sort()).toEqual(['get', 'post'])
    expect(
      doc.paths['/tokens/v2/{username}'].get.parameters.map((p: { name: string }) => p.name),
    ).toEqual([
      'username',
      'access_token',
      'usage',
      'default',
      'limit',
      'sortby',
      'start',
      'parent',
    ])
    expect(JSON.stringify(doc)).not.toContain('errorMessage')
  })
})

describe('logs', () => {
  it('redact the access token from URLs', () => {
    expect(redactUrl('/tokens/v2?limit=1&access_token=sk.abc.def&x=1')).toBe(
      '/tokens/v2?limit=1&access_token=[redacted]&x=1',
    )
    expect(redactUrl('/tokens/v2?ACCESS_TOKEN=pk.a.b')).toBe('/tokens/v2?ACCESS_TOKEN=[redacted]')
  })

  it('log requests at info; above info, only what went wrong', async () => {
    h = await harness()
    const sk = await h.token('alice', all)
    for (const level of ['info', 'warn'] as const) {
      const lines: { level: number; msg: string; err?: { message: string } }[] = []
      const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line)) })
      const app = buildApp(h.ctx, { logger })
      app.get('/boom', () => {
        throw new Error('boom')
      })
      await app.ready()
      expect((await call(app, 'GET', '/scopes/v1/alice', sk.token)).status).toBe(200)
      const boom = await call(app, 'GET', '/boom')
      expect(boom).toMatchObject({ status: 500, body: { message: 'Internal Server Error' } })
      await app.close()
      const messages = lines.map((l) => l.msg)
      if (level === 'info') {
        expect(messages).toEqual([
          'incoming request',
          'request completed',
          'incoming request',
          'unhandled error',
          'request completed',
        ])
      } else {
        expect(messages).toEqual(['unhandled error'])
      }
      expect(lines.find((l) => l.msg === 'unhandled error')).toMatchObject({
        level: 50,
        err: { message: 'boom' },
      })
    }
  })
})
