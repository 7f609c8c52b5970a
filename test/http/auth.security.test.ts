import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness } from '../helpers.js'

let h: Harness
let targetId: string

beforeAll(async () => {
  h = await harness()
  targetId = (await h.token('alice', ['styles:read'])).id
})
afterAll(() => h.close())

const future = () => new Date(h.clock.now + 30 * 60_000).toISOString()

/** Every authenticated route, with a request that succeeds when the token is right. */
const routes = [
  {
    name: 'list tokens',
    method: 'GET',
    path: () => '/tokens/v2/alice',
    scope: 'tokens:read',
    ok: 200,
  },
  {
    name: 'create a token',
    method: 'POST',
    path: () => '/tokens/v2/alice',
    body: () => ({ note: 'n' }),
    scope: 'tokens:write',
    ok: 200,
  },
  {
    name: 'create a temporary token',
    method: 'POST',
    path: () => '/tokens/v2/alice',
    body: () => ({ expires: future(), scopes: [] }),
    scope: 'tokens:write',
    ok: 200,
  },
  {
    name: 'update a token',
    method: 'PATCH',
    path: () => `/tokens/v2/alice/${targetId}`,
    body: () => ({ note: 'changed' }),
    scope: 'tokens:write',
    ok: 200,
  },
  {
    name: 'delete a token',
    method: 'DELETE',
    path: () => `/tokens/v2/alice/${targetId}`,
    scope: 'tokens:write',
    ok: 204,
  },
  {
    name: 'list scopes',
    method: 'GET',
    path: () => '/scopes/v1/alice',
    scope: 'scopes:list',
    ok: 200,
  },
] as const

function send(route: (typeof routes)[number], token?: string, path = route.path()) {
  return call(h.app, route.method, path, token, 'body' in route ? route.body() : undefined)
}

function flipSignature(token: string) {
  const last = token.at(-5) === 'A' ? 'B' : 'A'
  return `${token.slice(0, -5)}${last}${token.slice(-4)}`
}

describe.each(routes)('$name', (route) => {
  const unauthorized = { status: 401, body: { message: 'Unauthorized' } }

  it('refuses a request without a token with 401', async () => {
    expect(await send(route)).toMatchObject(unauthorized)
    expect(await send(route, '')).toMatchObject(unauthorized)
  })

  it('refuses a malformed token with 401', async () => {
    expect(await send(route, 'not-a-token')).toMatchObject(unauthorized)
    expect(await send(route, 'sk.e30.AAAAAAAAAAAAAAAAAAAAAA')).toMatchObject(unauthorized)
  })

  it('refuses a token with a bad signature with 401', async () => {
    const good = await h.token('alice', all)
    expect(await send(route, flipSignature(good.token))).toMatchObject(unauthorized)
  })

  it('refuses a revoked token with 401', async () => {
    const doomed = await h.token('alice', all)
    expect(
      (await call(h.app, 'DELETE', `/tokens/v2/alice/${doomed.id}`, doomed.token)).status,
    ).toBe(204)
    expect(await send(route, doomed.token)).toMatchObject(unauthorized)
  })

  it('refuses an expired temporary token with 401', async () => {
    const sk = await h.token('alice', all)
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, {
      expires: new Date(h.clock.now + 60_000).toISOString(),
      scopes: all,
    })
    expect(tk.status).toBe(200)
    h.clock.now += 61_000
    try {
      expect(await send(route, tk.body.token)).toMatchObject(unauthorized)
    } finally {
      h.clock.now -= 61_000
    }
  })

  it('answers 404 No such user for an unknown username', async () => {
    const sk = await h.token('alice', all)
    const path = route.path().replace('/alice', '/nobody')
    expect(await send(route, sk.token, path)).toMatchObject({
      status: 404,
      body: { message: 'No such user' },
    })
  })

  it("answers 404 Not found for another account's token", async () => {
    const bobs = await h.token('bob', all)
    expect(await send(route, bobs.token)).toMatchObject({
      status: 404,
      body: { message: 'Not found' },
    })
  })

  it('answers 404 Not found when the token lacks the scope', async () => {
    const lacking = await h.token(
      'alice',
      all.filter((s) => s !== route.scope),
    )
    expect(await send(route, lacking.token)).toMatchObject({
      status: 404,
      body: { message: 'Not found' },
    })
  })

  it('succeeds with a token of the account holding the scope', async () => {
    targetId = (await h.token('alice', ['styles:read'])).id
    const sk = await h.token('alice', all)
    expect((await send(route, sk.token)).status).toBe(route.ok)
  })
})
