import { Type } from '@sinclair/typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { ApiError, type ErrorKind, errorTable, personText } from '../../src/errors.js'
import { validatorCompiler } from '../../src/http/validation.js'
import { all, call, type Harness, harness } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { DashboardClient, titleOf } from './dashboard-client.js'

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
  noSuchUser: [
    ['list an unknown user', () => call(h.app, 'GET', '/tokens/v2/zed', sk)],
    ['admin API: delete an unknown account', () => admin(h.app, 'DELETE', '/accounts/zed')],
  ],
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
  badPlan: [
    [
      'admin API: create with an unknown plan',
      () => admin(h.app, 'POST', '/accounts', { username: 'x', plan: 'gold' }),
    ],
  ],
  badUsername: [
    [
      'admin API: create a malformed name',
      () => admin(h.app, 'POST', '/accounts', { username: 'Bad Name' }),
    ],
  ],
  nameResting: [
    [
      'admin API: create the name of an account deleted a minute ago',
      async () => {
        await admin(h.app, 'POST', '/accounts', { username: 'resting' })
        await admin(h.app, 'DELETE', '/accounts/resting')
        return admin(h.app, 'POST', '/accounts', { username: 'resting' })
      },
    ],
  ],
  personExists: [
    [
      'admin API: create the login of a person who joined by invitation',
      async () => {
        const invited = { email: 'carla@example.com', role: 'viewer' }
        const { secret } = await h.ctx.members.invite('bob', invited, cliActor)
        const password = 'a long enough password'
        await h.ctx.members.accept(
          secret,
          { newLogin: 'carla', password, confirm: password },
          cliActor,
        )
        return admin(h.app, 'POST', '/accounts', { username: 'carla' })
      },
    ],
  ],
  tokenPolicy: [
    [
      'admin API: a token policy out of range',
      () => admin(h.app, 'PUT', '/accounts/bob/token-policy', { idleDays: 2 }),
    ],
  ],
  memberInvalid: [
    [
      'admin API: invite a malformed email',
      () => admin(h.app, 'POST', '/accounts/bob/members', { email: 'nope', role: 'viewer' }),
    ],
  ],
  memberMissing: [
    [
      'admin API: remove an unknown member',
      () => admin(h.app, 'DELETE', '/accounts/bob/members/zed'),
    ],
  ],
  badWebhookUrl: [
    [
      'admin API: a webhook to plain http',
      () => admin(h.app, 'POST', '/webhooks', { url: 'http://example.com/hook' }),
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

/**
 * Rows proved elsewhere, with where: by their own harness (429, 403), not reachable by a client
 * (500, 503), or refusals only the dashboard meets, proved by its pages.
 */
const elsewhere: Partial<Record<ErrorKind, string>> = {
  tooManyRequests: 'test/http/transport.test.ts (rate limit)',
  httpsRequired: 'test/http/transport.test.ts',
  operatorScope: 'test/http/admin-scopes.security.test.ts (a verifier key on every admin route)',
  internal: 'test/http/transport.test.ts (a route that throws)',
  unavailable: 'test/http/health.test.ts (shutting down)',
  loginTaken: 'test/http/members.test.ts (an invitation accepted as alice)',
  linkUnknown: 'below (a setup or invitation link never issued)',
  linkGone: 'test/http/members.test.ts, test/http/dashboard.security.test.ts (410)',
  badPassword: 'test/http/dashboard.security.test.ts (a short password)',
  passwordMismatch: 'test/http/dashboard.security.test.ts (setup link, two passwords)',
  wrongPassword: 'test/http/dashboard.security.test.ts (current password is wrong)',
  totpRefused: 'test/http/factors.test.ts (a wrong code while setting up)',
  noSuchFactor: 'below (removing a factor that is not there)',
  lastFactor: 'test/http/factors.test.ts (refused=last)',
}

describe('the error table', () => {
  it('has a case for every row', () => {
    const covered = [...Object.keys(cases), ...Object.keys(elsewhere)].sort()
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

describe('what a person is told', () => {
  it.each([
    // A refusal: the CLI prints its sentence as the service wrote it; a page, as the row says.
    ['accountExists', 'account bob already exists', 'This username is taken.'],
    ['nameResting', 'account x was deleted at T; the name can be used again an hour later'],
    ['personExists', 'account carla already exists (a person has that name)'],
    ['badUsername', 'username must be 1-32 characters'],
    ['memberInvalid', 'email must be an email address', 'Email must be an email address.'],
    ['memberMissing', 'no such member: zed', 'No such member: zed.'],
    ['lastOwner', 'an account must keep at least one owner'],
    ['noSuchUser', 'no such account: zed'],
    ['passwordMismatch', 'The two passwords are not the same'],
    ['linkGone', 'This invitation has been used, revoked or has expired.'],
  ] as [ErrorKind, string, string?][])('%s: %s', (kind, details, page) => {
    const err = new ApiError(kind, details)
    expect(personText(err, 'line')).toBe(details)
    const capital = details.charAt(0).toUpperCase() + details.slice(1)
    const stopped = kind === 'lastOwner' ? `${capital}.` : capital
    expect(personText(err, 'page')).toBe(page ?? stopped)
  })

  it('a contract error: its message and details, as the API says them', () => {
    const err = new ApiError('invalidResources', 'no such event: x')
    expect(personText(err, 'line')).toBe('resources are invalid: no such event: x')
    expect(personText(err, 'page')).toBe('resources are invalid: no such event: x.')
    expect(personText(new ApiError('noSuchUser'), 'line')).toBe('No such user')
    expect(personText(new ApiError('notFound'), 'page')).toBe('Not found.')
    expect(personText(new ApiError('badWebhookUrl', 'url has no host'), 'line')).toBe(
      'resources are invalid: url has no host',
    )
  })

  it('a refusal borrows a contract message, never its place in the reverse map', () => {
    // The query validator finds a kind by message, the first row that has it: the contract's.
    const kinds = Object.keys(errorTable) as ErrorKind[]
    const first = new Map<string, ErrorKind>()
    for (const kind of kinds) {
      const message = errorTable[kind][1]
      if (!first.has(message)) first.set(message, kind)
    }
    expect([...first.values()]).toEqual(kinds.slice(0, kinds.indexOf('internal') + 1))
    const schema = Type.Object({ a: Type.Integer({ errorMessage: 'resources are invalid' }) })
    const validate = validatorCompiler({ schema, httpPart: 'querystring' } as never) as (
      value: unknown,
    ) => { error?: ApiError }
    expect(validate({ a: 'x' }).error?.kind).toBe('invalidResources')
  })
})

describe('refusals a page answers with a page of its own', () => {
  it('a setup or invitation link never issued: 404, as its GET', async () => {
    const b = new DashboardClient(h.app)
    const never = 'x'.repeat(43)
    for (const path of [`/account/setup/${never}`, `/account/invitations/${never}`]) {
      const password = 'a long enough password'
      const res = await b.post(path, { login: 'newbie', password, confirm: password })
      expect(res.status).toBe(404)
      expect(titleOf(res.body)).toBe('Page not found')
    }
  })

  it('removing a factor that is not there says so', async () => {
    await expect(h.ctx.factors.remove('bob', 'nope', cliActor, 'bob', false)).rejects.toMatchObject(
      { kind: 'noSuchFactor', statusCode: 404 },
    )
  })
})
