import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sign } from '../../src/tokens/codec.js'
import { all, call, type Harness, harness } from '../helpers.js'

/**
 * Whatever a token string's payload holds, at any JSON value, retrieve answers 200 with one of
 * the five codes and every authenticated route answers as the contract says: never a 500.
 * Strings are signed with the real key half of the time, so the checks past the signature
 * (expiry, record lookup, the answer's timestamps) see forged values too.
 */

const codes = ['TokenValid', 'TokenMalformed', 'TokenInvalid', 'TokenExpired', 'TokenRevoked']

let h: Harness
let secret: Buffer
let id = ''

beforeAll(async () => {
  h = await harness()
  const key = h.ctx.keyring.newestFirst[0]
  if (key === undefined) throw new Error('no signing key')
  secret = key.secret
  id = (await h.token('alice', all)).id
})
afterAll(() => h.close())

const times = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(1e20, -1e20, 8.64e15, 253402300799, 253402300800, -1, 0, 1.5, 2 ** 53),
  fc.integer({ min: 1_700_000_000, max: 1_900_000_000 }),
)
const anything = fc.oneof(fc.jsonValue(), times)
const payload = fc.record(
  {
    u: fc.oneof(fc.constantFrom('alice', 'bob', 'nobody', '__proto__'), anything),
    a: fc.oneof(fc.constant(id), fc.string(), anything),
    exp: fc.oneof(times, anything),
    iat: fc.oneof(times, anything),
    scopes: fc.oneof(fc.constant(all), fc.array(fc.oneof(fc.constantFrom(...all), anything))),
    client: anything,
  },
  { requiredKeys: [] },
)
const tokenString = fc
  .record({
    usage: fc.constantFrom('pk', 'sk', 'tk', 'xx', ''),
    payload: fc.oneof(payload, anything),
    signed: fc.boolean(),
    signature: fc.string(),
  })
  .map(({ usage, payload, signed, signature }) => {
    const body = `${usage}.${Buffer.from(JSON.stringify(payload) ?? '').toString('base64url')}`
    return `${body}.${signed ? sign(body, secret) : signature}`
  })

const routes: [method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: () => string][] = [
  ['GET', () => '/tokens/v2/alice'],
  ['POST', () => '/tokens/v2/alice'],
  ['PATCH', () => `/tokens/v2/alice/${id}`],
  ['DELETE', () => '/tokens/v2/alice/cnonexistentnonexistent0'],
  ['GET', () => '/scopes/v1/alice'],
]

/** What a 401 says of a token that retrieve does not call valid (http/guard.ts). */
const why: Record<string, string> = {
  TokenMalformed: 'the token is malformed: not a pk, sk or tk token string',
  TokenInvalid: "the token's signature is not valid",
  TokenExpired: 'the token has expired',
  TokenRevoked: 'the token was revoked (deleted, or its account is gone or disabled)',
}

describe('any payload', () => {
  it('makes retrieve answer 200 with one of the five codes', async () => {
    await fc.assert(
      fc.asyncProperty(tokenString, async (token) => {
        const answer = await call(h.app, 'GET', '/tokens/v2', token)
        expect(answer.status).toBe(200)
        expect(codes).toContain(answer.body.code)
      }),
      { numRuns: 400 },
    )
  })

  it('makes every authenticated route answer 401 unless retrieve calls it valid', async () => {
    await fc.assert(
      fc.asyncProperty(tokenString, fc.constantFrom(...routes), async (token, [method, path]) => {
        const { body } = await call(h.app, 'GET', '/tokens/v2', token)
        const answer = await call(h.app, method, path(), token, { note: 'n' })
        if (body.code !== 'TokenValid') {
          expect(answer.status).toBe(401)
          expect(answer.body).toEqual({ message: 'Unauthorized', details: why[body.code] })
        } else {
          expect(answer.status).toBeLessThan(500)
        }
      }),
      { numRuns: 400 },
    )
  })

  it('answers TokenMalformed for a signed tk whose times no timestamp can say', async () => {
    for (const exp of [1e20, -1, 253402300800]) {
      const body = `tk.${Buffer.from(JSON.stringify({ u: 'alice', exp, iat: 0, scopes: [] })).toString('base64url')}`
      const answer = await call(h.app, 'GET', '/tokens/v2', `${body}.${sign(body, secret)}`)
      expect(answer).toMatchObject({ status: 200, body: { code: 'TokenMalformed' } })
    }
  })
})
