import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, harness } from '../helpers.js'

let h: Harness
beforeAll(async () => {
  h = await harness()
})
afterAll(() => h.close())

const get = (url: string, headers: Record<string, string> = {}) =>
  h.app.inject({ method: 'GET', url, headers })

const csp =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"

/** The asset URLs the page names, by plain name (`swagger-ui-bundle.js`). */
async function assetUrls() {
  const page = (await get('/docs')).body
  const urls = new Map<string, string>()
  for (const m of page.matchAll(/\/docs\/assets\/([a-z-]+)\.[0-9a-f]{12}(\.[a-z]+)/g)) {
    urls.set(`${m[1]}${m[2]}`, m[0])
  }
  return urls
}

describe('GET /docs', () => {
  it('is an HTML page with the strict CSP and the security headers, without CORS', async () => {
    for (const url of ['/docs', '/docs/']) {
      const res = await get(url)
      expect(res.statusCode, url).toBe(200)
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(res.headers['content-security-policy']).toBe(csp)
      expect(res.headers['x-content-type-options']).toBe('nosniff')
      expect(res.headers['x-frame-options']).toBe('DENY')
      expect(res.headers['referrer-policy']).toBe('same-origin')
      expect(res.headers['cache-control']).toBe('no-cache')
      expect(res.headers['access-control-allow-origin']).toBeUndefined()
      expect(res.body).toContain('<title>Tessera token API reference</title>')
      expect(res.body).toContain('data-url="/openapi.json"')
    }
  })

  it('has no inline script or style: only the four versioned assets', async () => {
    const page = (await get('/docs')).body
    expect(page).not.toMatch(/<script(?![^>]*\ssrc=)/)
    expect(page).not.toMatch(/<style|\sstyle=|\son[a-z]+=/)
    expect([...(await assetUrls()).keys()].sort()).toEqual([
      'docs.css',
      'docs.js',
      'swagger-ui-bundle.js',
      'swagger-ui.css',
    ])
  })
})

describe('GET /docs/assets/:name', () => {
  it('serves each asset with its type, cached for good under its versioned name', async () => {
    const urls = await assetUrls()
    const types = {
      'swagger-ui.css': 'text/css; charset=utf-8',
      'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
      'docs.css': 'text/css; charset=utf-8',
      'docs.js': 'text/javascript; charset=utf-8',
    }
    for (const [name, type] of Object.entries(types)) {
      const res = await get(urls.get(name) as string)
      expect(res.statusCode, name).toBe(200)
      expect(res.headers['content-type'], name).toBe(type)
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable')
      expect(res.headers['x-content-type-options']).toBe('nosniff')
      expect(res.headers['content-encoding']).toBeUndefined()
    }
    expect((await get(urls.get('docs.js') as string)).body).toContain('SwaggerUIBundle({')
  })

  it('is gzipped for a client that takes gzip, and not for one that refuses it', async () => {
    const url = (await assetUrls()).get('swagger-ui-bundle.js') as string
    const plain = await get(url)
    const zipped = await get(url, { 'accept-encoding': 'gzip, deflate, br' })
    expect(zipped.headers['content-encoding']).toBe('gzip')
    expect(zipped.headers.vary).toBe('accept-encoding')
    expect(zipped.rawPayload.length).toBeLessThan(plain.rawPayload.length / 2)
    expect(gunzipSync(zipped.rawPayload).equals(plain.rawPayload)).toBe(true)
    const refused = await get(url, { 'accept-encoding': 'gzip;q=0, identity' })
    expect(refused.headers['content-encoding']).toBeUndefined()
  })

  it('answers 404 for a name not in the allow-list, an old version or a path out of it', async () => {
    for (const url of [
      '/docs/assets/swagger-ui-bundle.js', // unversioned
      '/docs/assets/swagger-ui-bundle.000000000000.js',
      '/docs/assets/index.html',
      '/docs/assets/swagger-ui-bundle.js.map',
      '/docs/assets/..%2f..%2fpackage.json',
      '/docs/assets/..%2F..%2F..%2Fpackage.json',
      '/docs/assets/../../package.json',
      '/docs/assets/%2e%2e/%2e%2e/package.json',
      '/docs/assets/docs.js%00.css',
      '/docs/assets/',
    ]) {
      const res = await get(url)
      expect(res.statusCode, url).toBe(404)
      expect(res.body, url).not.toContain('"name": "tessera"')
    }
  })
})

describe('the API alongside the page', () => {
  it('/openapi.json is still served as before, and the page is not in it', async () => {
    const res = await get('/openapi.json')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['content-security-policy']).toBeUndefined()
    const doc = res.json()
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.paths['/tokens/v2'].get.summary).toBe('Retrieve and validate a token')
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs'))).toEqual([])
  })

  it('a token retrieve carries none of the page headers', async () => {
    const { token } = await h.token('alice', ['tokens:read'])
    const res = await get(`/tokens/v2?access_token=${token}`)
    expect(res.statusCode).toBe(200)
    expect(res.json().code).toBe('TokenValid')
    expect(res.headers['content-security-policy']).toBeUndefined()
    expect(res.headers['access-control-allow-origin']).toBe('*')
  })
})
