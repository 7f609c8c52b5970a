import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ErrorKind, errorTable } from '../../src/errors.js'
import { all, call, type Harness, harness } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

let h: Harness
let sk: string
let pk: { id: string; token: string }
let scopeless: { id: string }
let defaultId: string

beforeAll(async () => {
  h = await harness(adminEnv)
  sk = (await h.token('alice', [...all, 'styles:read', 'styles:write'])).token
  pk = await h.token('alice', ['styles:read'])
  scopeless = await h.token('alice', [])
  defaultId = (await call(h.app, 'GET', '/tokens/v2/alice?default=true', sk)).body[0].id
})
afterAll(() => h.close())

const minutes = (n: number) => new Date(h.clock.now + n * 60_000).toISOString()
async function raw(method: 'POST' | 'PATCH', url: string, payload: string) {
  const res = await h.app.inject({
    method,
    url: `${url}?access_token=${sk}`,
    payload,
    headers: { 'content-type': 'application/json' },
  })
  return { status: res.statusCode, body: res.json(), headers: res.headers }
}

type Case = [
  string,
  () => Promise<{ status: number; body: unknown; headers: Record<string, unknown> }>,
]

/** Requests that must each produce the row's status and message. */
const cases: Partial<Record<ErrorKind, Case[]>> = {
  accessTokenRequired: [
    ['retrieve without access_token', () => call(h.app, 'GET', '/tokens/v2')],
    ['retrieve with an empty access_token', () => call(h.app, 'GET', '/tokens/v2?access_token=')],
  ],
  unauthorized: [
    ['list with a random string', () => call(h.app, 'GET', '/tokens/v2/alice', 'x.y.z')],
  ],
  noSuchUser: [['list an unknown user', () => call(h.app, 'GET', '/tokens/v2/zed', sk)]],
  notFound: [
    [
      'update an unknown token id',
      () => call(h.app, 'PATCH', '/tokens/v2/alice/cxxxxxxxxxxxxxxxxxxxxxxxx', sk, { note: 'a' }),
    ],
    ['delete a malformed token id', () => call(h.app, 'DELETE', '/tokens/v2/alice/nope', sk)],
    ['list with a pk token', () => call(h.app, 'GET', '/tokens/v2/alice', pk.token)],
  ],
  badUsage: [['usage=tk', () => call(h.app, 'GET', '/tokens/v2/alice?usage=tk', sk)]],
  badDefault: [['default=yes', () => call(h.app, 'GET', '/tokens/v2/alice?default=yes', sk)]],
  badLimit: [
    ['limit=0', () => call(h.app, 'GET', '/tokens/v2/alice?limit=0', sk)],
    ['limit=101', () => call(h.app, 'GET', '/tokens/v2/alice?limit=101', sk)],
    ['limit=abc', () => call(h.app, 'GET', '/tokens/v2/alice?limit=abc', sk)],
    ['limit=1.5', () => call(h.app, 'GET', '/tokens/v2/alice?limit=1.5', sk)],
    ['limit=-1', () => call(h.app, 'GET', '/tokens/v2/alice?limit=-1', sk)],
  ],
  badSortby: [['sortby=id', () => call(h.app, 'GET', '/tokens/v2/alice?sortby=id', sk)]],
  badStart: [
    ['a random start', () => call(h.app, 'GET', '/tokens/v2/alice?start=garbage!', sk)],
    ['a token id as start', () => call(h.app, 'GET', `/tokens/v2/alice?start=${pk.id}`, sk)],
  ],
  expiresInPast: [
    [
      'expires a minute ago',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { expires: minutes(-1), scopes: [] }),
    ],
  ],
  expiresTooFar: [
    [
      'expires in 61 minutes',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { expires: minutes(61), scopes: [] }),
    ],
  ],
  expiresAfterAuthorizer: [
    [
      'a tk minting a later tk',
      async () => {
        const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
          expires: minutes(10),
          scopes: ['tokens:write'],
        })
        return call(h.app, 'POST', '/tokens/v2/alice', tk.body.token, {
          expires: minutes(20),
          scopes: [],
        })
      },
    ],
  ],
  invalidScopes: [
    [
      'an unknown scope',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { scopes: ['nope:nope'] }),
    ],
    [
      'a scope of another plan',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { scopes: ['user:write'] }),
    ],
    [
      'a scope the creator lacks',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { scopes: ['fonts:read'] }),
    ],
    [
      'a secret scope on a pk',
      () => call(h.app, 'PATCH', `/tokens/v2/alice/${pk.id}`, sk, { scopes: ['styles:write'] }),
    ],
    [
      'scopes on a scopeless token',
      () =>
        call(h.app, 'PATCH', `/tokens/v2/alice/${scopeless.id}`, sk, { scopes: ['styles:read'] }),
    ],
    [
      'a temporary scope the creator lacks',
      () =>
        call(h.app, 'POST', '/tokens/v2/alice', sk, {
          expires: minutes(5),
          scopes: ['fonts:read'],
        }),
    ],
  ],
  invalidResources: [
    ['malformed JSON', () => raw('POST', '/tokens/v2/alice', '{"note":')],
    ['a JSON array body', () => call(h.app, 'POST', '/tokens/v2/alice', sk, [])],
    ['a JSON string body', () => call(h.app, 'POST', '/tokens/v2/alice', sk, 'hello')],
    ['a null body', () => call(h.app, 'POST', '/tokens/v2/alice', sk, null)],
    ['note is a number', () => call(h.app, 'POST', '/tokens/v2/alice', sk, { note: 5 })],
    [
      'note over 1024 chars',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { note: 'x'.repeat(1025) }),
    ],
    [
      'scopes is a string',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { scopes: 'styles:read' }),
    ],
    ['a scope is a number', () => call(h.app, 'POST', '/tokens/v2/alice', sk, { scopes: [1] })],
    [
      '101 allowedUrls',
      () =>
        call(h.app, 'POST', '/tokens/v2/alice', sk, {
          allowedUrls: Array.from({ length: 101 }, (_, i) => `a${i}.com`),
        }),
    ],
    [
      'a URL over 2048 chars',
      () =>
        call(h.app, 'POST', '/tokens/v2/alice', sk, {
          allowedUrls: [`https://a.com/${'p'.repeat(2048)}`],
        }),
    ],
    [
      'a URL that is not one',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { allowedUrls: ['not a url'] }),
    ],
    [
      'a ftp URL',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { allowedUrls: ['ftp://a.com'] }),
    ],
    [
      'expires that is not a timestamp',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { expires: 'tomorrow', scopes: [] }),
    ],
    [
      'expires on 31 February',
      () =>
        call(h.app, 'POST', '/tokens/v2/alice', sk, {
          expires: '2026-02-31T00:00:00Z',
          scopes: [],
        }),
    ],
    [
      'expires is a number',
      () => call(h.app, 'POST', '/tokens/v2/alice', sk, { expires: 1, scopes: [] }),
    ],
    [
      'a temporary token with allowedUrls',
      () =>
        call(h.app, 'POST', '/tokens/v2/alice', sk, {
          expires: minutes(5),
          scopes: [],
          allowedUrls: ['a.com'],
        }),
    ],
    [
      'an update naming no field',
      () => call(h.app, 'PATCH', `/tokens/v2/alice/${pk.id}`, sk, { other: 1 }),
    ],
    ['an update with an empty body', () => raw('PATCH', `/tokens/v2/alice/${pk.id}`, '')],
  ],
  defaultTokenUndeletable: [
    ['delete the default token', () => call(h.app, 'DELETE', `/tokens/v2/alice/${defaultId}`, sk)],
  ],
  accountExists: [
    [
      'admin API: create a taken name',
      () => admin(h.app, 'POST', '/accounts', { username: 'bob' }),
    ],
  ],
  rollTooFar: [
    [
      'roll with the old string ending in 25 hours',
      () =>
        call(h.app, 'POST', `/tokens/v2/alice/${pk.id}/roll`, sk, { expires: minutes(25 * 60) }),
    ],
  ],
  temporaryNotRollable: [
    [
      'roll authorised by a temporary token',
      async () => {
        const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
          scopes: ['tokens:write', 'styles:read'],
          expires: minutes(5),
        })
        return call(h.app, 'POST', `/tokens/v2/alice/${pk.id}/roll`, tk.body.token)
      },
    ],
  ],
  tokenRetiring: [
    [
      'roll a token rolled already',
      async () => {
        const t = await h.token('alice', ['styles:read'])
        await call(h.app, 'POST', `/tokens/v2/alice/${t.id}/roll`, sk, { expires: minutes(60) })
        return call(h.app, 'POST', `/tokens/v2/alice/${t.id}/roll`, sk)
      },
    ],
  ],
  retiringLine: [
    [
      'the retiring string deletes the token that replaced it',
      async () => {
        const w = await h.token('alice', [...all, 'styles:read'])
        const rolled = await call(h.app, 'POST', `/tokens/v2/alice/${w.id}/roll`, sk, {
          expires: minutes(60),
        })
        return call(h.app, 'DELETE', `/tokens/v2/alice/${rolled.body.id}`, w.token)
      },
    ],
  ],
  lastOwner: [
    ['admin API: remove the only owner', () => admin(h.app, 'DELETE', '/accounts/bob/members/bob')],
    [
      'admin API: make the only owner a viewer',
      () => admin(h.app, 'PATCH', '/accounts/bob/members/bob', { role: 'viewer' }),
    ],
  ],
}

/** Rows proved elsewhere: by their own harness (429, 403) or not reachable by a client (500, 503). */
const elsewhere: ErrorKind[] = ['tooManyRequests', 'httpsRequired', 'internal', 'unavailable']

describe('the error table', () => {
  it('has a case for every row', () => {
    const covered = [...Object.keys(cases), ...elsewhere].sort()
    expect(covered).toEqual(Object.keys(errorTable).sort())
  })

  for (const [kind, list] of Object.entries(cases) as [ErrorKind, Case[]][]) {
    const [status, message] = errorTable[kind]
    it.each(list)(`${status} ${message}: %s`, async (_name, request) => {
      const res = await request()
      expect(res.status).toBe(status)
      expect((res.body as { message: string }).message).toBe(message)
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    })
  }
})
