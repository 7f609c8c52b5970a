import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { verifierPlugin } from '../src/fastify.js'
import { createVerifier, tokenFrom, type Verifier, verifierMiddleware } from '../src/index.js'
import { active, type FakeTessera, fakeKey, startFakeTessera, tokenOf } from './fake-tessera.js'

let tessera: FakeTessera
let verifier: Verifier
const reader = tokenOf('pk', { u: 'acme', a: 'creader' })
const writer = tokenOf('sk', { u: 'acme', a: 'cwriter' })
const restricted = tokenOf('pk', { u: 'acme', a: 'crestricted' })
const revoked = tokenOf('pk', { u: 'acme', a: 'cgone' })

beforeEach(async () => {
  tessera = await startFakeTessera()
  const answer = (id: string, scope: string, more = {}) =>
    active({ username: 'acme', usage: 'pk', id, scope, ...more })
  tessera.answers.set(reader, answer('creader', 'styles:read'))
  tessera.answers.set(writer, answer('cwriter', 'styles:read styles:write'))
  tessera.answers.set(
    restricted,
    answer('crestricted', 'styles:read', { allowedUrls: ['https://app.example.com'] }),
  )
  verifier = createVerifier({ url: tessera.url, adminKey: fakeKey, onError: () => {} })
  await verifier.ready()
})

afterEach(async () => {
  verifier.close()
  await tessera.stop()
})

describe('tokenFrom', () => {
  it('takes the Bearer token first, else the first access_token of the query', () => {
    expect(tokenFrom({ authorization: 'Bearer abc' }, '/x?access_token=def')).toBe('abc')
    expect(tokenFrom({ authorization: 'bearer  abc ' }, undefined)).toBe('abc')
    expect(tokenFrom({ authorization: 'Basic abc' }, '/x?access_token=def')).toBe('def')
    expect(tokenFrom({}, '/x?a=1&access_token=d%2Ef&access_token=g')).toBe('d.f')
    expect(tokenFrom({}, '/x?%61ccess_token=def')).toBe('def')
    expect(tokenFrom({}, '/x?access_token=')).toBeUndefined()
    expect(tokenFrom({ authorization: 'Bearer ' }, '/x')).toBeUndefined()
  })
})

describe('verifierPlugin (Fastify)', () => {
  let app: FastifyInstance

  beforeEach(async () => {
    app = Fastify()
    await app.register(verifierPlugin, { verifier, scope: 'styles:read' })
    app.get('/open', { config: { tessera: false } }, async (request) => ({
      tessera: request.tessera,
    }))
    app.get('/styles', async (request) => ({ account: request.tessera?.account }))
    app.post('/styles', { config: { tessera: { scope: 'styles:write' } } }, async () => ({
      ok: true,
    }))
  })

  afterEach(() => app.close())

  const inject = (method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers })

  it('lets a valid token through, with the token on the request', async () => {
    const res = await inject('GET', '/styles', { authorization: `Bearer ${reader}` })
    expect([res.statusCode, res.json()]).toEqual([200, { account: 'acme' }])
    // The second request is answered from the cache, synchronously.
    expect((await inject('GET', `/styles?access_token=${reader}`)).statusCode).toBe(200)
    expect(tessera.introspections).toEqual([reader])
  })

  it('answers 401 without a token or with a bad one, 403 for a scope or a URL', async () => {
    const cases: Array<[string, Record<string, string>, number, string]> = [
      ['/styles', {}, 401, 'an access token is required'],
      [`/styles?access_token=${revoked}`, {}, 401, 'the access token has been revoked'],
      ['/styles?access_token=nonsense', {}, 401, 'the access token is malformed'],
      [
        `/styles?access_token=${restricted}`,
        {},
        403,
        'the access token may not be used from this URL',
      ],
      [
        `/styles?access_token=${restricted}`,
        { origin: 'https://evil.net' },
        403,
        'the access token may not be used from this URL',
      ],
    ]
    for (const [url, headers, status, details] of cases) {
      const res = await inject('GET', url, headers)
      expect([url, res.statusCode, res.json()]).toEqual([
        url,
        status,
        { message: status === 401 ? 'Unauthorized' : 'Forbidden', details },
      ])
      expect(res.headers['content-type']).toMatch(/^application\/json/)
    }
    const post = await inject('POST', `/styles?access_token=${reader}`)
    expect([post.statusCode, post.json().message]).toEqual([403, 'Forbidden'])
    expect(post.headers['www-authenticate']).toBe('Bearer error="insufficient_scope"')
    expect((await inject('POST', `/styles?access_token=${writer}`)).statusCode).toBe(200)
    const allowed = await inject('GET', `/styles?access_token=${restricted}`, {
      origin: 'https://app.example.com',
    })
    expect(allowed.statusCode).toBe(200)
  })

  it('leaves an opted-out route open, and answers 503 when Tessera cannot be asked', async () => {
    expect((await inject('GET', '/open')).json()).toEqual({ tessera: null })
    expect((await inject('GET', '/nowhere')).statusCode).toBe(404)
    await tessera.stop()
    const res = await inject('GET', `/styles?access_token=${writer}`)
    expect([res.statusCode, res.json().message, res.headers['retry-after']]).toEqual([
      503,
      'Service Unavailable',
      '1',
    ])
  })

  it('applies only inside the context it is registered in', async () => {
    const outer = Fastify()
    outer.get('/public', async () => ({ ok: true }))
    await outer.register(async (api) => {
      await api.register(verifierPlugin, { verifier })
      api.get('/private', async (request) => ({ account: request.tessera?.account }))
    })
    expect((await outer.inject('/public')).statusCode).toBe(200)
    expect((await outer.inject('/private')).statusCode).toBe(401)
    expect((await outer.inject(`/private?access_token=${reader}`)).json()).toEqual({
      account: 'acme',
    })
    await outer.close()
  })
})

describe('verifierMiddleware (node:http, Express, Connect)', () => {
  let server: Server
  let base: string

  beforeEach(async () => {
    const check = verifierMiddleware({ verifier, scope: ['styles:read'] })
    server = createServer((req, res) =>
      check(req, res, (err) => {
        res.end(JSON.stringify(err ? { err: String(err) } : { account: req.tessera?.account }))
      }),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterEach(() => new Promise((resolve) => server.close(resolve)))

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { headers })
    return [res.status, await res.json()]
  }

  it('calls next with req.tessera set, or answers the refusal itself', async () => {
    expect(await get('/', { authorization: `Bearer ${reader}` })).toEqual([
      200,
      { account: 'acme' },
    ])
    expect(await get(`/?access_token=${reader}`)).toEqual([200, { account: 'acme' }])
    expect(await get('/')).toEqual([
      401,
      { message: 'Unauthorized', details: 'an access token is required' },
    ])
    expect(await get(`/?access_token=${revoked}`)).toEqual([
      401,
      { message: 'Unauthorized', details: 'the access token has been revoked' },
    ])
    expect(
      await get(`/?access_token=${restricted}`, { referer: 'https://app.example.com/x' }),
    ).toEqual([200, { account: 'acme' }])
    expect((await get(`/?access_token=${restricted}`))[0]).toBe(403)
  })

  it('takes the token from where getToken says', async () => {
    const check = verifierMiddleware({
      verifier,
      getToken: (req) => req.headers['x-api-key'] as string,
    })
    const seen = await new Promise((resolve) => {
      const req = { headers: { 'x-api-key': reader }, url: '/' }
      check(req as never, {} as never, () => resolve((req as { tessera?: unknown }).tessera))
    })
    expect(seen).toMatchObject({ valid: true, account: 'acme' })
  })
})
