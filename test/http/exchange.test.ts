import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { createContext } from '../../src/context.js'
import { call, type Harness, harness, T0 } from '../helpers.js'
import { confusedToken, startIssuer, type TestIssuer, unsignedToken } from '../issuer.js'
import { admin, adminEnv } from './admin-client.js'

// Workload identity exchange (issue 46, docs/machines.md), against a local issuer serving its
// discovery document and keys over HTTPS: every refusal answered with its RFC 6749 error and
// audited in the account; a jti used once, on whichever instance.

const seconds = Math.floor(T0 / 1000)
let issuer: TestIssuer
beforeAll(async () => {
  issuer = await startIssuer()
})
afterAll(() => issuer.close())

/** GitHub Actions' claims, as its OIDC tokens carry them. */
const github = (extra: Record<string, unknown> = {}) => ({
  iss: issuer.url,
  aud: 'https://tessera.example',
  sub: 'repo:octo/app:environment:production',
  repository: 'octo/app',
  ref: 'refs/heads/main',
  environment: 'production',
  job_workflow_ref: 'octo/app/.github/workflows/deploy.yml@refs/heads/main',
  jti: randomUUID(),
  iat: seconds - 10,
  nbf: seconds - 10,
  exp: seconds + 300,
  ...extra,
})

const policy = () => ({
  issuer: issuer.url,
  audience: 'https://tessera.example',
  subject: 'repo:octo/app:*',
  claims: { ref: 'refs/heads/main', job_workflow_ref: 'octo/app/.github/workflows/*' },
  scopes: ['styles:read', 'fonts:read', 'tokens:read'],
  maxTtl: 900,
})

const form = (token: string, extra: Record<string, string> = {}) =>
  new URLSearchParams({
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    subject_token: token,
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    ...extra,
  }).toString()

describe('workload identity exchange (POST /tokens/v2/{username}/exchange)', () => {
  let h: Harness
  beforeEach(async () => {
    h = await harness({
      ...adminEnv,
      EXCHANGE_CA_FILE: issuer.caFile,
      EXCHANGE_ALLOW_PRIVATE: 'true',
    })
    const set = await admin(h.app, 'PUT', '/accounts/alice/trust-policies', [policy()])
    expect(set.status).toBe(200)
  })
  afterEach(() => h.close())

  const exchange = async (body: string, username = 'alice', app = h.app) => {
    const res = await app.inject({
      method: 'POST',
      url: `/tokens/v2/${username}/exchange`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: body,
    })
    return { status: res.statusCode, body: res.json(), headers: res.headers }
  }
  const refusals = async () =>
    (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.exchange_refused')).body

  it.each(['rsa', 'ec'] as const)(
    'answers a temporary token for a %s-signed identity the policy admits',
    async (kind) => {
      const claims = github()
      const res = await exchange(form(issuer.sign(claims, { kind })))
      expect(res.status).toBe(200)
      expect(res.headers['cache-control']).toBe('no-store')
      expect(res.body).toEqual({
        access_token: expect.stringMatching(/^tk\./),
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        expires_in: 900,
        scope: 'styles:read fonts:read tokens:read',
      })
      const retrieved = await call(h.app, 'GET', '/tokens/v2', res.body.access_token)
      expect(retrieved.body).toEqual({
        code: 'TokenValid',
        token: {
          usage: 'tk',
          user: 'alice',
          scopes: ['styles:read', 'fonts:read', 'tokens:read'],
          client: 'api',
          expires: new Date((seconds + 900) * 1000).toISOString(),
          created: new Date(seconds * 1000).toISOString(),
        },
      })
      const audit = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.exchanged')).body
      expect(audit.map((e: { details: unknown }) => e.details)).toEqual([
        {
          issuer: issuer.url,
          subject: claims.sub,
          policy: 0,
          scopes: ['styles:read', 'fonts:read', 'tokens:read'],
          expires: new Date((seconds + 900) * 1000).toISOString(),
        },
      ])
    },
  )

  it('narrows to the scope asked, and refuses a scope the policy does not give', async () => {
    const narrow = await exchange(form(issuer.sign(github()), { scope: 'styles:read' }))
    expect(narrow.body.scope).toBe('styles:read')
    const wide = await exchange(form(issuer.sign(github()), { scope: 'styles:read tokens:write' }))
    expect(wide.status).toBe(400)
    expect(wide.body).toEqual({
      error: 'invalid_scope',
      error_description: 'the trust policy does not give tokens:write',
    })
  })

  const untrusted = 'the token is not signed by an issuer this account trusts'
  /** The refusal, its reason in the audit log, and what the caller is told when that is less. */
  const refused: [string, () => string, string, string?][] = [
    [
      'another issuer',
      () => issuer.sign(github({ iss: 'https://token.actions.githubusercontent.com' })),
      "no trust policy of this account names the token's issuer",
      untrusted,
    ],
    [
      'another audience',
      () => issuer.sign(github({ aud: 'sts.amazonaws.com' })),
      "no trust policy for this issuer admits the token's audience",
    ],
    [
      'an expired token',
      () => issuer.sign(github({ exp: seconds - 61 })),
      `the token expired at ${new Date((seconds - 61) * 1000).toISOString()}`,
    ],
    [
      'a token not yet valid',
      () => issuer.sign(github({ nbf: seconds + 120 })),
      `the token is not valid before ${new Date((seconds + 120) * 1000).toISOString()}`,
    ],
    ['alg none', () => unsignedToken(github()), 'the token is not signed (alg none)'],
    [
      'HS256 keyed with the public key',
      () => confusedToken(issuer, github()),
      'the token is signed with a shared secret (HS256), which is never accepted',
    ],
    [
      'an unknown kid',
      () => issuer.sign(github(), { header: { kid: 'made-up' } }),
      "no key of the issuer matches the token's kid and alg",
      untrusted,
    ],
    [
      'a key the issuer never published',
      () => issuer.sign(github(), { key: 'retired' }),
      "no key of the issuer matches the token's kid and alg",
      untrusted,
    ],
    [
      'an identity living longer than a day',
      () => issuer.sign(github({ exp: seconds + 2 * 86_400 })),
      'the token lives longer than a day',
    ],
    [
      'another subject',
      () => issuer.sign(github({ sub: 'repo:evil/app:ref:refs/heads/main' })),
      "no trust policy for this issuer admits the token's subject",
    ],
    [
      'another branch',
      () => issuer.sign(github({ ref: 'refs/heads/feature' })),
      "no trust policy for this issuer admits the token's claim ref",
    ],
    [
      'no jti',
      () => issuer.sign(github({ jti: undefined })),
      'the token has no jti: it could be replayed',
    ],
  ]

  it.each(refused)(
    'refuses %s with invalid_grant, audited',
    async (_name, token, reason, shown) => {
      const res = await exchange(form(token()))
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ error: 'invalid_grant', error_description: shown ?? reason })
      const [event] = await refusals()
      expect(event.details).toMatchObject({ error: 'invalid_grant', reason })
      expect(event.actor).toEqual({ type: 'anonymous' })
    },
  )

  it('refuses a tampered payload: the signature does not hold', async () => {
    const [header, , signature] = issuer.sign(github()).split('.')
    const payload = Buffer.from(JSON.stringify(github({ sub: 'repo:octo/app:x' }))).toString(
      'base64url',
    )
    const res = await exchange(form(`${header}.${payload}.${signature}`))
    expect(res.body).toEqual({ error: 'invalid_grant', error_description: untrusted })
    const [event] = await refusals()
    expect(event.details.reason).toBe("the token's signature does not hold")
  })

  it('exchanges a jti once, on another instance of the same database too', async () => {
    const token = issuer.sign(github())
    expect((await exchange(form(token))).status).toBe(200)
    const again = await exchange(form(token))
    expect(again.body.error_description).toBe('the token was exchanged already (its jti was seen)')
    const other = await createContext(h.ctx.config, { now: () => h.clock.now })
    const app = buildApp(other)
    try {
      await app.ready()
      const elsewhere = await exchange(form(token), 'alice', app)
      expect(elsewhere.status).toBe(400)
      expect(elsewhere.body.error_description).toBe(
        'the token was exchanged already (its jti was seen)',
      )
    } finally {
      await app.close()
      await other.close()
    }
  })

  it('never admits a token into an account whose policies do not name it', async () => {
    const res = await exchange(form(issuer.sign(github())), 'bob')
    const missing = await exchange(form(issuer.sign(github())), 'nobody')
    // Told the same: a stranger learns neither that bob exists nor whom he trusts.
    expect(res.body).toEqual({ error: 'invalid_grant', error_description: untrusted })
    expect(missing.body).toEqual(res.body)
    const empty = await exchange('', 'nobody')
    expect(empty.body.error).toBe('invalid_request')
    expect(await refusals()).toEqual([])
  })

  it('fetches no keys from a private address unless EXCHANGE_ALLOW_PRIVATE says so', async () => {
    const strict = await harness({ ...adminEnv, EXCHANGE_CA_FILE: issuer.caFile })
    try {
      await admin(strict.app, 'PUT', '/accounts/alice/trust-policies', [policy()])
      const fetched = issuer.discoveryFetches
      const res = await exchange(form(issuer.sign(github())), 'alice', strict.app)
      expect(res.status).toBe(503)
      expect(res.body).toEqual({
        error: 'temporarily_unavailable',
        error_description: "the issuer's keys cannot be fetched now: try again later",
      })
      expect(issuer.discoveryFetches).toBe(fetched)
      const [event] = (
        await admin(strict.app, 'GET', '/accounts/alice/audit?action=token.exchange_refused')
      ).body
      expect(event.details.reason).toBe("the issuer's keys cannot be fetched now: try again later")
      expect(event.details.cause).toBe(
        `the issuer ${issuer.url} may not be fetched for its discovery document (its host 127.0.0.1 is a loopback address)`,
      )
    } finally {
      await strict.close()
    }
  })

  it("limits by address before anything is read, and charges the account's budget only for a proven identity", async () => {
    const limited = await harness({
      ...adminEnv,
      EXCHANGE_CA_FILE: issuer.caFile,
      EXCHANGE_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_PER_MINUTE: '3',
    })
    const from = async (address: string, body: string) => {
      const res = await limited.app.inject({
        method: 'POST',
        url: '/tokens/v2/alice/exchange',
        remoteAddress: address,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: body,
      })
      return { status: res.statusCode, body: res.json(), retryAfter: res.headers['retry-after'] }
    }
    try {
      await admin(limited.app, 'PUT', '/accounts/alice/trust-policies', [policy()])
      // Await the start of a window: the counts are fixed minute windows.
      limited.clock.now = Math.ceil(limited.clock.now / 60_000) * 60_000
      for (let i = 0; i < 3; i++) expect((await from('203.0.113.9', 'junk=1')).status).toBe(400)
      const flooded = await from('203.0.113.9', 'junk=1')
      expect(flooded.status).toBe(429)
      expect(flooded.body.error_description).toMatch(/^too many exchanges from this address/)
      // The stranger's junk cost the account nothing: its job still exchanges, three times.
      for (let i = 0; i < 3; i++) {
        expect((await from(`198.51.100.${i}`, form(issuer.sign(github())))).status).toBe(200)
      }
      const spent = await from('198.51.100.9', form(issuer.sign(github())))
      expect(spent.status).toBe(429)
      expect(spent.retryAfter).toBe('60')
      expect(spent.body).toEqual({
        error: 'temporarily_unavailable',
        error_description: 'too many exchanges for this account: try again in 60 s',
      })
    } finally {
      await limited.close()
    }
  })

  it('answers invalid_request for a malformed request, unaudited', async () => {
    const bad = await exchange(form(issuer.sign(github()), { grant_type: 'client_credentials' }))
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({
      error: 'invalid_request',
      error_description: 'grant_type must be urn:ietf:params:oauth:grant-type:token-exchange',
    })
    const none = await exchange(
      'grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange',
    )
    expect(none.body.error_description).toBe('subject_token is required')
    expect(await refusals()).toEqual([])
  })

  it("follows a rotation of the issuer's keys, and a flood of unknown kids costs one fetch a minute", async () => {
    expect((await exchange(form(issuer.sign(github())))).status).toBe(200)
    const fetched = issuer.jwksFetches
    for (let i = 0; i < 1000; i++) {
      const res = await exchange(form(issuer.sign(github(), { header: { kid: `bogus-${i}` } })))
      expect(res.status).toBe(400)
    }
    expect(issuer.jwksFetches - fetched).toBeLessThanOrEqual(1)
    issuer.rotate()
    h.clock.now += 61_000
    const rotated = issuer.sign(github({ iat: seconds + 60, exp: seconds + 400 }))
    expect((await exchange(form(rotated))).status).toBe(200)
    expect(issuer.jwksFetches - fetched).toBeLessThanOrEqual(2)
  })
})
