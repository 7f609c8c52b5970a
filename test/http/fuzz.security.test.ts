import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { all, type Harness, harness } from '../helpers.js'

let h: Harness
let tokens: string[]

beforeAll(async () => {
  h = await harness()
  const sk = await h.token('alice', all)
  const pk = await h.token('alice', ['styles:read'])
  tokens = [sk.token, pk.token, `${sk.token}x`, sk.token.replace('sk.', 'pk.'), 'sk.e30.x', '']
})
afterAll(() => h.close())

const weird = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom(
    '%',
    '%zz',
    '%00',
    '..',
    '__proto__',
    'constructor',
    'a'.repeat(5000),
    'alice',
    'cxxxxxxxxxxxxxxxxxxxxxxxx',
  ),
)

const request = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD'),
  path: fc.oneof(
    fc.constantFrom(
      '/tokens/v2',
      '/tokens/v2/',
      '/tokens/v2/alice',
      '/scopes/v1/alice',
      '/tokens/v2/alice/',
    ),
    weird.map((w) => `/tokens/v2/${encodeURIComponent(w)}`),
    fc
      .tuple(weird, weird)
      .map(([a, b]) => `/tokens/v2/${encodeURIComponent(a)}/${encodeURIComponent(b)}`),
    weird.map((w) => `/tokens/v2/alice/${w}`),
  ),
  token: fc.option(
    fc.oneof(
      fc.nat().map((i) => i),
      weird,
    ),
    { nil: undefined },
  ),
  query: fc.array(
    fc.tuple(
      fc.constantFrom('limit', 'usage', 'default', 'sortby', 'start', 'access_token', 'x'),
      weird,
    ),
    { maxLength: 4 },
  ),
  body: fc.option(
    fc.oneof(
      fc.json(),
      weird,
      fc
        .record(
          {
            note: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
            scopes: fc.oneof(
              fc.array(weird),
              fc.string(),
              fc.constant(null),
              fc.array(fc.constantFrom(...all, 'styles:read')),
            ),
            allowedUrls: fc.oneof(fc.array(weird), fc.constant(null), fc.integer()),
            expires: fc.oneof(
              fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
              weird,
              fc.integer(),
            ),
          },
          { requiredKeys: [] },
        )
        .map((o) => JSON.stringify(o)),
    ),
    { nil: undefined },
  ),
  contentType: fc.constantFrom(
    'application/json',
    'text/plain',
    'application/x-www-form-urlencoded',
    undefined,
  ),
})

describe('fuzz', () => {
  it('answers 1,000 random malformed requests without a 5xx, every error a JSON message', async () => {
    let count = 0
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const params = new URLSearchParams()
        if (r.token !== undefined) {
          params.append(
            'access_token',
            typeof r.token === 'number' ? (tokens[r.token % tokens.length] as string) : r.token,
          )
        }
        for (const [k, v] of r.query) params.append(k, v)
        const res = await h.app.inject({
          method: r.method as 'GET',
          url: `${r.path}?${params}`,
          ...(r.body === undefined ? {} : { payload: r.body }),
          headers: r.contentType ? { 'content-type': r.contentType } : {},
        })
        count++
        expect(res.statusCode, `${r.method} ${r.path} -> ${res.body}`).toBeLessThan(500)
        if (res.statusCode >= 400 && r.method !== 'HEAD') {
          expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
          expect(typeof res.json().message).toBe('string')
        }
      }),
      { numRuns: 1000 },
    )
    expect(count).toBe(1000)
  })
})
