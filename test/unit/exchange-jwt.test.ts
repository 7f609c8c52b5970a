import { createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { IssuerKeys, type IssuerKeysOptions } from '../../src/exchange/issuer-keys.js'
import {
  acceptedAlgorithms,
  type DecodedJwt,
  decodeJwt,
  signatureHolds,
  timeRefusal,
} from '../../src/exchange/jwt.js'
import { confusedToken, signJws, startIssuer, type TestIssuer, unsignedToken } from '../issuer.js'

// The clock every check reads: 2030-01-01T00:00:00Z, moved by hand.
const t0 = Date.UTC(2030, 0, 1)
const s0 = t0 / 1000
const claims = { sub: 'repo:acme/app', aud: 'tessera', exp: s0 + 600 }
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
/** A token with any header and payload and a signature that holds for nothing. */
const forge = (header: unknown, payload: unknown = claims, signature = 'c2ln') =>
  `${b64(header)}.${b64(payload)}.${signature}`

let issuer: TestIssuer
let clock: number
const keysFor = (options: Partial<IssuerKeysOptions> = {}) =>
  new IssuerKeys({ now: () => clock, caFile: issuer.caFile, allowPrivate: true, ...options })

/** The whole check as the exchange makes it: 'valid', or why not. */
async function verdict(keys: IssuerKeys, token: string): Promise<string> {
  const jwt = decodeJwt(token)
  if (typeof jwt === 'string') return jwt
  const key = await keys.key(issuer.url, jwt.kid, jwt.alg)
  if (key === undefined) return 'no key fits'
  if (!signatureHolds(jwt, key)) return 'the signature does not hold'
  return timeRefusal(jwt.claims, clock, 30) ?? 'valid'
}

const decoded = (token: string) => decodeJwt(token) as DecodedJwt
const published = (index: number) =>
  createPublicKey({ key: issuer.jwks().keys[index] as JsonWebKey, format: 'jwk' })
/** The lookup of the RSA key fails with IssuerUnavailable and this message. */
const refused = (keys: IssuerKeys, message: string, url = issuer.url) =>
  expect(keys.key(url, issuer.kid(), 'RS256')).rejects.toMatchObject({
    name: 'IssuerUnavailable',
    message,
  })
const hs256 = 'the token is signed with a shared secret (HS256), which is never accepted'
const all = 'RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA'
const crit = 'the token requires header extensions (crit) that are not understood'
/** An interception answering `path` only (`/jwks` or `/disco`, the discovery document). */
const answer =
  (at: string, status: number, body: () => unknown): TestIssuer['intercept'] =>
  (path) => {
    if (path !== (at === '/disco' ? '/.well-known/openid-configuration' : at)) return undefined
    const value = body()
    return { status, body: typeof value === 'string' ? value : JSON.stringify(value) }
  }

beforeEach(async () => {
  clock = t0
  issuer = await startIssuer()
})
afterEach(() => issuer.close())

describe('decodeJwt refuses what is not a signed token it could check', () => {
  const notThree = 'the token is not three base64url parts separated by dots'
  const rs = { alg: 'RS256' }
  it.each<[string, () => string, string]>([
    ['alg none', () => unsignedToken(claims), 'the token is not signed (alg none)'],
    ['HS256 keyed with the public key', () => confusedToken(issuer, claims), hs256],
    ['alg RS1', () => forge({ alg: 'RS1' }), `the token's alg is not one of ${all}`],
    ['no alg', () => forge({ typ: 'JWT' }), 'the token has no alg'],
    ['crit', () => forge({ ...rs, crit: ['b64'], b64: false }), crit],
    ['a header array', () => forge([rs]), "the token's header is not a JSON object"],
    ['a payload null', () => forge(rs, null), "the token's payload is not a JSON object"],
    ['a kid number', () => forge({ ...rs, kid: 7 }), "the token's kid is not a string"],
    ['no signature', () => forge(rs, claims, ''), 'the token has no signature'],
    ['two parts', () => forge(rs).split('.').slice(0, 2).join('.'), notThree],
    ['padding', () => `${forge(rs)}=`, notThree],
    ['17 KiB', () => forge(rs, { pad: 'x'.repeat(16_384) }), 'the token is longer than 16 KiB'],
    ['nothing', () => '', 'the token is empty'],
  ])('%s', (_name, token, sentence) => {
    expect(decodeJwt(token())).toBe(sentence)
  })

  it('keeps the parts it read', () => {
    const token = issuer.sign(claims)
    const jwt = decoded(token)
    expect(jwt.alg).toBe('RS256')
    expect(jwt.kid).toBe(issuer.kid('rsa'))
    expect(jwt.claims).toEqual({ iss: issuer.url, ...claims })
    expect(jwt.signingInput).toBe(token.split('.').slice(0, 2).join('.'))
  })
})

describe('signatures', () => {
  it('verify for the RSA and the EC key, by kid or by the one key of the alg', async () => {
    const keys = keysFor()
    expect(await verdict(keys, issuer.sign(claims))).toBe('valid')
    expect(await verdict(keys, issuer.sign(claims, { kind: 'ec' }))).toBe('valid')
    expect(await verdict(keys, issuer.sign(claims, { header: { kid: undefined } }))).toBe('valid')
    expect([keys.fetches, issuer.jwksFetches, issuer.discoveryFetches]).toEqual([1, 1, 1])
  })

  it('do not hold for another key under the published kid, nor over a changed payload', async () => {
    const keys = keysFor()
    for (const kind of ['rsa', 'ec'] as const) {
      const header = { kid: issuer.kid(kind) }
      const other = issuer.sign(claims, { kind, key: 'retired', header })
      expect(await verdict(keys, other)).toBe('the signature does not hold')
      const [h, , s] = issuer.sign(claims, { kind }).split('.')
      const tampered = `${h}.${b64({ iss: issuer.url, ...claims, sub: 'repo:evil/app' })}.${s}`
      expect(await verdict(keys, tampered)).toBe('the signature does not hold')
    }
  })

  it('never verify HS256 over a public key, ES384 over P-256, or ES256 over RSA', async () => {
    const keys = keysFor()
    const [rsaKey, ecKey] = [published(0), published(1)]
    const confused = { ...decoded(issuer.sign(claims)), alg: 'HS256' }
    expect(signatureHolds(confused, rsaKey)).toBe(false)
    const es384 = issuer.sign(claims, { kind: 'ec', header: { alg: 'ES384' } })
    expect(await verdict(keys, es384)).toBe('no key fits')
    expect(signatureHolds(decoded(es384), ecKey)).toBe(false)
    expect(signatureHolds(decoded(issuer.sign(claims, { kind: 'ec' })), rsaKey)).toBe(false)
    // Without alg on the JWKs, the key's kind alone refuses the P-256 key for ES384.
    const bare = issuer.jwks().keys.map(({ alg: _, ...jwk }) => jwk)
    issuer.intercept = answer('/jwks', 200, () => ({ keys: bare }))
    expect(await verdict(keysFor(), es384)).toBe('no key fits')
    expect(await verdict(keysFor(), issuer.sign(claims, { kind: 'ec' }))).toBe('valid')
  })

  it('hold for each accepted alg under its own key only, and never under RSA-1024', () => {
    const own: Record<string, KeyObject> = {
      RS: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
      ES256: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey,
      ES384: generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).privateKey,
      ES512: generateKeyPairSync('ec', { namedCurve: 'secp521r1' }).privateKey,
      EdDSA: generateKeyPairSync('ed25519').privateKey,
    }
    const keyOf = (alg: string) => (own[alg] ?? own.RS) as KeyObject
    const holds = acceptedAlgorithms.map((alg) => {
      const jwt = decoded(signJws({ alg }, claims, keyOf(alg)))
      const verifiers = Object.values(own).map((k) => createPublicKey(k))
      return [alg, verifiers.map((k) => signatureHolds(jwt, k)).filter(Boolean).length]
    })
    expect(holds).toEqual(acceptedAlgorithms.map((alg) => [alg, 1]))
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 })
    const jwt = decoded(signJws({ alg: 'RS256' }, claims, weak.privateKey))
    expect(signatureHolds(jwt, weak.publicKey)).toBe(false)
  })
})

describe('time claims (leeway 30 s)', () => {
  const nbf = { ...claims, nbf: s0 + 60 }
  it.each<[string, Record<string, unknown>, number, string | undefined]>([
    ['exp + leeway', { exp: s0 }, 30_000, 'the token expired at 2030-01-01T00:00:00.000Z'],
    ['exp + leeway - 1 ms', { exp: s0 }, 29_999, undefined],
    ['nbf - leeway', nbf, 30_000, undefined],
    ['nbf - leeway - 1 ms', nbf, 29_999, 'the token is not valid before 2030-01-01T00:01:00.000Z'],
    ['no exp', { sub: 'x' }, 0, 'the token has no exp'],
    ['an exp string', { exp: String(s0 + 600) }, 0, "the token's exp is not a time in seconds"],
    [
      'iat after now + leeway',
      { ...claims, iat: s0 + 31 },
      0,
      'the token was issued in the future',
    ],
    ['iat at now + leeway', { ...claims, iat: s0 + 30 }, 0, undefined],
  ])('%s', (_name, time, afterMs, sentence) => {
    expect(timeRefusal(time, t0 + afterMs, 30)).toBe(sentence)
  })

  it('refuses an expired token from the issuer with its sentence', async () => {
    const token = issuer.sign({ ...claims, exp: s0 - 30 })
    expect(await verdict(keysFor(), token)).toBe('the token expired at 2029-12-31T23:59:30.000Z')
  })
})

describe('IssuerKeys', () => {
  it('finds a rotated key by one refetch once the floor has passed', async () => {
    const keys = keysFor()
    const before = issuer.sign(claims)
    expect(await verdict(keys, before)).toBe('valid')
    issuer.rotate()
    const after = issuer.sign(claims)
    expect(await verdict(keys, after)).toBe('no key fits')
    expect(issuer.jwksFetches).toBe(1)
    clock += 60_000
    expect(await verdict(keys, after)).toBe('valid')
    expect(await verdict(keys, before)).toBe('no key fits')
    expect([keys.fetches, issuer.jwksFetches]).toEqual([2, 2])
  })

  it('fetches once per floor however many made-up kids arrive', async () => {
    const keys = keysFor()
    expect(await verdict(keys, issuer.sign(claims))).toBe('valid')
    clock += 60_000
    const found = []
    for (let i = 0; i < 1000; i++) found.push(await keys.key(issuer.url, `made-up-${i}`, 'RS256'))
    expect(found.filter((k) => k !== undefined)).toEqual([])
    expect([keys.fetches, issuer.jwksFetches]).toEqual([2, 2])
    clock += 59_999
    expect(await keys.key(issuer.url, 'made-up', 'RS256')).toBeUndefined()
    expect(issuer.jwksFetches).toBe(2)
    clock += 1
    expect(await keys.key(issuer.url, 'made-up', 'RS256')).toBeUndefined()
    expect([keys.fetches, issuer.jwksFetches]).toEqual([3, 3])
  })

  it('shares one fetch among concurrent lookups', async () => {
    const keys = keysFor()
    const lookups = Array.from({ length: 50 }, () => keys.key(issuer.url, issuer.kid(), 'RS256'))
    const found = await Promise.all(lookups)
    expect(new Set(found).size).toBe(1)
    expect(found[0]?.asymmetricKeyType).toBe('rsa')
    clock += 60_000
    const madeUp = Array.from({ length: 50 }, (_, i) => keys.key(issuer.url, `x${i}`, 'RS256'))
    expect((await Promise.all(madeUp)).filter(Boolean)).toEqual([])
    expect([keys.fetches, issuer.jwksFetches, issuer.discoveryFetches]).toEqual([2, 2, 2])
  })

  it('refetches keys older than maxAgeMs on their next use', async () => {
    const keys = keysFor({ maxAgeMs: 600_000 })
    expect(await verdict(keys, issuer.sign(claims))).toBe('valid')
    clock += 599_999
    expect(await verdict(keys, issuer.sign(claims))).toBe('valid')
    expect(issuer.jwksFetches).toBe(1)
    clock += 1
    expect(await verdict(keys, issuer.sign(claims))).toBe('valid')
    expect(issuer.jwksFetches).toBe(2)
  })

  it('skips JWKs for encryption, of another alg, or that cannot be imported', async () => {
    const [rsa, ec] = issuer.jwks().keys
    const keys = [
      { ...rsa, use: 'enc' },
      { kty: 'RSA', kid: issuer.kid(), n: 'AA', e: 'AQAB' },
      { ...ec, alg: 'ES384' },
    ]
    issuer.intercept = answer('/jwks', 200, () => ({ keys }))
    expect(await verdict(keysFor(), issuer.sign(claims))).toBe('no key fits')
    expect(await verdict(keysFor(), issuer.sign(claims, { kind: 'ec' }))).toBe('no key fits')
  })

  it('refuses an http: issuer without asking it', async () => {
    const http = issuer.url.replace('https:', 'http:')
    const sentence = 'the issuer is not an https: URL without credentials, query or fragment'
    await refused(keysFor(), sentence, http)
    expect(issuer.discoveryFetches).toBe(0)
  })

  const discovery = (body: Record<string, unknown>) =>
    answer('/disco', 200, () => ({ issuer: issuer.url, jwks_uri: `${issuer.url}/jwks`, ...body }))
  const other = discovery({ issuer: 'https://issuer.example' })
  const httpJwks = discovery({ jwks_uri: 'http://127.0.0.1/jwks' })
  const [ofDiscovery, inDiscovery] = ['for its discovery document', 'in its discovery document']
  it.each<[string, TestIssuer['intercept'], string]>([
    ['names another issuer', other, `names another issuer ${inDiscovery}`],
    ['gives an http: jwks_uri', httpJwks, `gives no https: jwks_uri ${inDiscovery}`],
    ['answers 500', answer('/disco', 500, () => ({})), `answered HTTP 500 ${ofDiscovery}`],
    ['redirects', answer('/disco', 302, () => ''), `answered HTTP 302 ${ofDiscovery}`],
    [
      'sends HTML',
      answer('/jwks', 200, () => '<html>'),
      'answered no JSON object for its keys (JWKS)',
    ],
    [
      'sends no keys array',
      answer('/jwks', 200, () => ({ keys: 1 })),
      'sent no keys array in its JWKS',
    ],
    ['hangs', () => 'hang', `did not answer within 0.3 s ${ofDiscovery}`],
  ])('refuses an issuer that %s', async (_name, intercept, reason) => {
    issuer.intercept = intercept
    const keys = keysFor({ timeoutMs: 300 })
    await refused(keys, `the issuer ${issuer.url} ${reason}`)
    expect(issuer.jwksFetches).toBe(reason.includes('JWKS') ? 1 : 0)
  })

  it('refuses a JWKS over 1 MiB, says so again within the floor, and recovers after it', async () => {
    const pad = 'x'.repeat(1024 * 1024)
    issuer.intercept = answer('/jwks', 200, () => ({ keys: [], pad }))
    const keys = keysFor()
    const tooLarge = `the issuer ${issuer.url} sent more than 1 MiB for its keys (JWKS)`
    await refused(keys, tooLarge)
    issuer.intercept = undefined
    clock += 59_999
    await refused(keys, tooLarge)
    expect([keys.fetches, issuer.jwksFetches]).toEqual([1, 1])
    clock += 1
    expect(await verdict(keys, issuer.sign(claims))).toBe('valid')
    expect([keys.fetches, issuer.jwksFetches]).toEqual([2, 2])
  })

  it('does not trust the self-signed issuer without its CA file', async () => {
    const reason = 'could not be reached for its discovery document (self-signed certificate)'
    await refused(
      new IssuerKeys({ now: () => clock, allowPrivate: true }),
      `the issuer ${issuer.url} ${reason}`,
    )
  })
})
