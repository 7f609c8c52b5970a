import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, tampered } from '../helpers.js'

/**
 * The token API takes the token as `Authorization: Bearer <token>` as well as in the
 * `access_token` query parameter (Tessera's extension, docs/api.md). Both may be given when they
 * are the same token; two different tokens are refused, whichever was meant.
 */
let h: Harness
let sk: string
beforeAll(async () => {
  h = await harness()
  sk = (await h.token('alice', [...all, 'styles:read'])).token
})
afterAll(() => h.close())

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'

/** `app.inject` with these headers, a JSON body, and the query as given in `url`. */
async function send(method: Method, url: string, headers: Record<string, string>, body?: unknown) {
  const res = await h.app.inject({
    method,
    url,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  })
  return {
    status: res.statusCode,
    body: res.body === '' ? undefined : res.json(),
    challenge: res.headers['www-authenticate'],
    limit: res.headers['x-rate-limit-limit'],
  }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const inQuery = (url: string, token: string) =>
  `${url}${url.includes('?') ? '&' : '?'}access_token=${encodeURIComponent(token)}`
const future = () => new Date(h.clock.now + 30 * 60_000).toISOString()
const twoTokens = {
  message: 'Unauthorized',
  details:
    'the access_token query parameter and the Authorization header name different tokens: give one',
}

/** Every operation of the token API, with a request that succeeds with the right token. */
const operations = [
  { name: 'list tokens', method: 'GET' as const, url: () => '/tokens/v2/alice', ok: 200 },
  {
    name: 'create a token',
    method: 'POST' as const,
    url: () => '/tokens/v2/alice',
    body: () => ({ note: 'made with a bearer token', scopes: ['styles:read'] }),
    ok: 200,
  },
  {
    name: 'create a temporary token',
    method: 'POST' as const,
    url: () => '/tokens/v2/alice',
    body: () => ({ expires: future(), scopes: ['styles:read'] }),
    ok: 200,
  },
  {
    name: 'update a token',
    method: 'PATCH' as const,
    url: async () => `/tokens/v2/alice/${(await h.token('alice', ['styles:read'])).id}`,
    body: () => ({ note: 'changed' }),
    ok: 200,
  },
  {
    name: 'roll a token',
    method: 'POST' as const,
    url: async () => `/tokens/v2/alice/${(await h.token('alice', ['styles:read'])).id}/roll`,
    ok: 200,
  },
  {
    name: 'delete a token',
    method: 'DELETE' as const,
    url: async () => `/tokens/v2/alice/${(await h.token('alice', ['styles:read'])).id}`,
    ok: 204,
  },
  { name: 'list scopes', method: 'GET' as const, url: () => '/scopes/v1/alice', ok: 200 },
]

describe('a token in the Authorization header', () => {
  it.each(operations)(
    '$name: accepted alone, and beside the same token in the query',
    async (op) => {
      const alone = await send(op.method, await op.url(), bearer(sk), op.body?.())
      expect([alone.status, alone.challenge, alone.limit]).toEqual([op.ok, undefined, '100000'])
      const both = await send(op.method, inQuery(await op.url(), sk), bearer(sk), op.body?.())
      expect([both.status, both.challenge]).toEqual([op.ok, undefined])
    },
  )

  it.each(operations)('$name: refused with two different tokens, even both valid', async (op) => {
    const other = (await h.token('alice', all)).token
    const url = await op.url()
    const before = (await call(h.app, 'GET', '/tokens/v2/alice', sk)).body.length
    const res = await send(op.method, inQuery(url, sk), bearer(other), op.body?.())
    expect(res).toEqual({
      status: 401,
      body: twoTokens,
      challenge: 'Bearer realm="tokens", error="invalid_request"',
      limit: '100000',
    })
    // Nothing was done: no token made, none deleted.
    expect((await call(h.app, 'GET', '/tokens/v2/alice', sk)).body.length).toBe(before)
  })

  it('answers what the query answers, list for list', async () => {
    const query = await call(h.app, 'GET', '/tokens/v2/alice?limit=3', sk)
    const header = await send('GET', '/tokens/v2/alice?limit=3', bearer(sk))
    expect(header.body).toEqual(query.body)
    expect(header.status).toBe(200)
  })

  it('retrieves the token of the header; two different tokens answer 422 with why', async () => {
    const pk = h.alice.defaultToken.token as string
    const described = { usage: 'pk', user: 'alice', authorization: h.alice.defaultToken.id }
    expect((await send('GET', '/tokens/v2', bearer(pk))).body).toEqual({
      code: 'TokenValid',
      token: described,
    })
    expect((await send('GET', inQuery('/tokens/v2', pk), bearer(pk))).body).toEqual({
      code: 'TokenValid',
      token: described,
    })
    expect(await send('GET', inQuery('/tokens/v2', pk), bearer(sk))).toEqual({
      status: 422,
      body: { message: 'access token is required', details: twoTokens.details },
      challenge: undefined,
      limit: '100000',
    })
    expect((await send('GET', '/tokens/v2', bearer(tampered(pk)))).body).toEqual({
      code: 'TokenInvalid',
      token: described,
    })
  })

  it('reads the scheme in any case, and no other scheme', async () => {
    expect((await send('GET', '/tokens/v2/alice', { authorization: `bearer ${sk}` })).status).toBe(
      200,
    )
    expect(
      (await send('GET', '/tokens/v2/alice', { authorization: `BEARER  ${sk} ` })).status,
    ).toBe(200)
    // Another scheme's credentials are not a token of ours: the query's token stands alone.
    const basic = { authorization: 'Basic YWxpY2U6c2VjcmV0' }
    expect((await send('GET', inQuery('/tokens/v2/alice', sk), basic)).status).toBe(200)
    expect((await send('GET', '/tokens/v2/alice', { authorization: sk })).status).toBe(401)
    expect(await send('GET', '/tokens/v2/alice', basic)).toEqual({
      status: 401,
      body: {
        message: 'Unauthorized',
        details:
          'no token: give it as the access_token query parameter or an Authorization: Bearer header',
      },
      challenge: 'Bearer realm="tokens"',
      limit: '100000',
    })
    // An empty query parameter is no token: the header's is the one.
    expect((await send('GET', '/tokens/v2/alice?access_token=', bearer(sk))).status).toBe(200)
  })
})

describe('a 401 says why in details, with the RFC 6750 challenge', () => {
  const refused = (
    details: string,
    challenge = 'Bearer realm="tokens", error="invalid_token"',
  ) => ({
    status: 401,
    body: { message: 'Unauthorized', details },
    challenge,
    limit: '100000',
  })

  it('no token', async () => {
    const empty: Record<string, string>[] = [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Bearer   ' },
    ]
    for (const headers of empty) {
      expect(await send('GET', '/scopes/v1/alice', headers)).toEqual(
        refused(
          'no token: give it as the access_token query parameter or an Authorization: Bearer header',
          'Bearer realm="tokens"',
        ),
      )
    }
  })

  it('a malformed token, in the query or the header', async () => {
    const malformed = refused('the token is malformed: not a pk, sk or tk token string')
    for (const token of ['not-a-token', 'sk.e30.AAAAAAAAAAAAAAAAAAAAAA', 'a b']) {
      expect(await send('GET', inQuery('/tokens/v2/alice', token), {})).toEqual(malformed)
      expect(await send('GET', '/tokens/v2/alice', bearer(token))).toEqual(malformed)
    }
  })

  it('a bad signature, a revoked token, an expired one, an address not allowed', async () => {
    expect(await send('GET', '/tokens/v2/alice', bearer(tampered(sk)))).toEqual(
      refused("the token's signature is not valid"),
    )
    const doomed = await h.token('alice', all)
    expect((await call(h.app, 'DELETE', `/tokens/v2/alice/${doomed.id}`, sk)).status).toBe(204)
    expect(await send('GET', '/tokens/v2/alice', bearer(doomed.token))).toEqual(
      refused('the token was revoked (deleted, or its account is gone or disabled)'),
    )
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      expires: new Date(h.clock.now + 60_000).toISOString(),
      scopes: all,
    })
    h.clock.now += 61_000
    try {
      expect(await send('GET', '/tokens/v2/alice', bearer(tk.body.token))).toEqual(
        refused('the token has expired'),
      )
    } finally {
      h.clock.now -= 61_000
    }
    const office = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      scopes: all,
      allowedIps: ['203.0.113.7'],
    })
    expect(await send('GET', '/tokens/v2/alice', bearer(office.body.token))).toEqual(
      refused('the token may not be used from this address'),
    )
  })
})

describe('a 422 of a body names the field and what it must be', () => {
  const invalid = (details: string) => ({
    status: 422,
    body: { message: 'resources are invalid', details },
  })

  it('on create and update', async () => {
    const id = (await h.token('alice', ['styles:read'])).id
    const cases = [
      ['POST', '/tokens/v2/alice', { scopes: 'styles:read' }, 'scopes must be an array of strings'],
      ['POST', '/tokens/v2/alice', [], 'the body must be a JSON object'],
      ['POST', '/tokens/v2/alice', { note: 7 }, 'note must be a string of at most 1024 characters'],
      [
        'POST',
        '/tokens/v2/alice',
        { allowedUrls: ['x'.repeat(2049)] },
        'allowedUrls[0] must be a string of at most 2048 characters',
      ],
      [
        'PATCH',
        `/tokens/v2/alice/${id}`,
        { allowedUrls: 'https://example.com' },
        'allowedUrls must be an array of at most 100 strings of at most 2048 characters or null',
      ],
      [
        'PATCH',
        `/tokens/v2/alice/${id}`,
        { ratelimits: [{ name: 'burst', limit: '10', duration: 60_000 }] },
        'ratelimits[0].limit must be an integer',
      ],
    ] as const
    for (const [method, url, body, details] of cases) {
      const res = await call(h.app, method, url, sk, body)
      expect({ url, ...res, headers: undefined }).toEqual({
        url,
        ...invalid(details),
        headers: undefined,
      })
    }
  })
})
