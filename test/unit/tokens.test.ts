import { X509Certificate } from 'node:crypto'
import { createSecureContext } from 'node:tls'
import { describe, expect, it } from 'vitest'
import { newEventId } from '../../src/audit/events.js'
import { ApiError } from '../../src/errors.js'
import { isoTime, parseTimestamp } from '../../src/time.js'
import { generateSelfSigned } from '../../src/tls/self-signed.js'
import { encodeToken, parseToken, signatureMatches } from '../../src/tokens/codec.js'
import { newTokenId } from '../../src/tokens/ids.js'
import { parseSigningKeys } from '../../src/tokens/keyring.js'
import { normalizeAllowedUrls } from '../../src/tokens/rules.js'

const secret = Buffer.alloc(32, 7)

describe('token format', () => {
  it('encodes <usage>.<base64url payload>.<22-character signature>', () => {
    const token = encodeToken('pk', { u: 'alice', a: 'cabc' }, secret)
    const [usage, payload, signature] = token.split('.')
    expect(usage).toBe('pk')
    expect(JSON.parse(Buffer.from(payload as string, 'base64').toString())).toEqual({
      u: 'alice',
      a: 'cabc',
    })
    expect(signature).toMatch(/^[A-Za-z0-9_-]{22}$/)
    const parsed = parseToken(token)
    expect(parsed && signatureMatches(parsed, secret)).toBe(true)
    expect(parsed && signatureMatches(parsed, Buffer.alloc(32, 8))).toBe(false)
  })

  it('signs the same strings as ever: payload JSON.stringify({ u, a }), whatever the characters', () => {
    expect(encodeToken('pk', { u: 'alice', a: 'cabc' }, secret)).toBe(
      'pk.eyJ1IjoiYWxpY2UiLCJhIjoiY2FiYyJ9.PpLFAHWqGu8LAksBy1srug',
    )
    expect(encodeToken('sk', { u: 'a"b\\c\u00e9\u{1f600}', a: 'c\u0001' }, secret)).toBe(
      'sk.eyJ1IjoiYVwiYlxcY8Op8J-YgCIsImEiOiJjXHUwMDAxIn0.8mwiJfvkmekOVLIreMvSXw',
    )
  })

  it('never puts - or _ into a payload built from valid usernames, ids and scopes', () => {
    for (let i = 0; i < 200; i++) {
      const payload = encodeToken(
        'tk',
        {
          u: `user_${i}-x`,
          exp: 2e9 + i,
          iat: 2e9,
          scopes: ['styles:read', 'a.b_c-d'],
          client: 'api',
        },
        secret,
      ).split('.')[1]
      expect(payload).toMatch(/^[A-Za-z0-9]+$/)
      expect(encodeToken('sk', { u: `u-${i}_`, a: newTokenId() }, secret).split('.')[1]).toMatch(
        /^[A-Za-z0-9]+$/,
      )
    }
  })

  it('makes ids of c and 24 characters of [a-z0-9]', () => {
    const ids = new Set(Array.from({ length: 1000 }, newTokenId))
    expect(ids.size).toBe(1000)
    for (const id of ids) expect(id).toMatch(/^c[a-z0-9]{24}$/)
  })

  it('makes audit event ids of 13 + 4 hex digits and 8 base32 letters, in order, distinct', () => {
    const ids = Array.from({ length: 2000 }, () => newEventId(1_700_000_000_000))
    expect(new Set(ids).size).toBe(2000)
    expect([...ids].sort()).toEqual(ids)
    expect(ids[0]).toMatch(/^0018bcfe56800[0-9a-f]{4}[a-z2-7]{8}$/)
    expect(ids[1999]?.slice(0, 17)).toBe(
      `0018bcfe56800${(1999 + Number.parseInt(ids[0]?.slice(13, 17) ?? '', 16)).toString(16).padStart(4, '0')}`,
    )
    // Drawn uniformly: over 16,000 letters every one of the 32 comes up.
    expect(new Set(ids.flatMap((id) => [...id.slice(17)])).size).toBe(32)
  })

  it('parses only three-part strings with a known usage and a JSON object payload with u', () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
    expect(parseToken(`pk.${b64({ u: 'a', a: 'c' })}.sig`)?.usage).toBe('pk')
    expect(parseToken(`pk.${b64({ a: 'c' })}.sig`)).toBeUndefined()
    expect(parseToken(`pk.${b64([1])}.sig`)).toBeUndefined()
    expect(parseToken(`tk.${b64({ u: 'a', exp: '1', iat: 1 })}.sig`)).toBeUndefined()
    expect(parseToken(`tk.${b64({ u: 'a', exp: 1, iat: 1 })}.sig`)?.usage).toBe('tk')
    expect(parseToken(`pk.${b64({ u: 'a' })}`)).toBeUndefined()
  })
})

describe('SIGNING_KEYS', () => {
  it('reads id:base64 pairs, oldest first, and refuses short or duplicate keys', () => {
    const k = Buffer.alloc(32, 1).toString('base64')
    expect(parseSigningKeys(`a:${k},b:${k}`).map((x) => x.id)).toEqual(['a', 'b'])
    expect(() => parseSigningKeys('a:c2hvcnQ=')).toThrow(/at least 32 bytes/)
    expect(() => parseSigningKeys(`a:${k},a:${k}`)).toThrow(/unique/)
    expect(() => parseSigningKeys(k)).toThrow(/id:base64secret/)
  })
})

describe('input rules', () => {
  it('accepts URLs, host names, ports, paths and *. wildcards; refuses the rest', () => {
    const ok = [
      'https://example.com',
      'http://a.b.c:8080/x/y?z=1',
      'example.com',
      '*.example.com',
      'localhost:3000',
      'https://*.example.com/maps',
    ]
    expect(normalizeAllowedUrls(ok)).toEqual(ok)
    for (const bad of [
      'ftp://a.com',
      'a b',
      'https://',
      '*.',
      'a.com:99999',
      '-a.com',
      'https://a.com:0x',
    ]) {
      expect(() => normalizeAllowedUrls([bad]), bad).toThrow(ApiError)
    }
    expect(normalizeAllowedUrls([])).toBeNull()
  })

  it('parses RFC 3339 timestamps with Z, an offset or no zone, and refuses impossible dates', () => {
    expect(parseTimestamp('2026-11-22T12:00:00Z')).toBe(Date.UTC(2026, 10, 22, 12))
    expect(parseTimestamp('2026-11-22T12:00:00.5')).toBe(Date.UTC(2026, 10, 22, 12, 0, 0, 500))
    expect(parseTimestamp('2026-11-22T14:30:00+02:30')).toBe(Date.UTC(2026, 10, 22, 12))
    expect(parseTimestamp('2026-11-22T09:00:00-0300')).toBe(Date.UTC(2026, 10, 22, 12))
    for (const bad of [
      '2026-02-30T00:00:00Z',
      '2026-11-22',
      'now',
      '2026-11-22T25:00:00Z',
      '2026-11-22T12:00:00+25:00',
    ]) {
      expect(parseTimestamp(bad), bad).toBeUndefined()
    }
  })

  it('formats instants exactly as toISOString does, in any order, across days and years', () => {
    expect(isoTime(Date.UTC(2026, 10, 25, 4, 5, 6, 7))).toBe('2026-11-25T04:05:06.007Z')
    expect(isoTime(Date.UTC(2026, 10, 25, 23, 59, 59, 999))).toBe('2026-11-25T23:59:59.999Z')
    expect(isoTime(Date.UTC(2026, 10, 26))).toBe('2026-11-26T00:00:00.000Z')
    expect(isoTime(Date.UTC(2026, 10, 25, 12, 30))).toBe('2026-11-25T12:30:00.000Z')
    expect(isoTime(Date.UTC(2028, 1, 29, 1, 2, 3, 40))).toBe('2028-02-29T01:02:03.040Z')
    expect(isoTime(0)).toBe('1970-01-01T00:00:00.000Z')
    expect(isoTime(253_402_300_799_999)).toBe('9999-12-31T23:59:59.999Z')
    // Outside the fast range, V8's own form: six-digit years, years before 1970, fractions.
    expect(isoTime(253_402_300_800_000)).toBe('+010000-01-01T00:00:00.000Z')
    expect(isoTime(-1)).toBe('1969-12-31T23:59:59.999Z')
    expect(isoTime(Date.UTC(2026, 10, 25, 4, 5, 6, 7) + 0.5)).toBe('2026-11-25T04:05:06.007Z')
    expect(() => isoTime(Number.NaN)).toThrow(RangeError)
    // Random instants, some a millisecond or a day from the one before: every path of the cache.
    let seed = 0x2545f491
    const next = () => {
      seed ^= seed << 13
      seed ^= seed >>> 17
      seed ^= seed << 5
      return (seed >>> 0) / 2 ** 32
    }
    let ms = Date.UTC(2026, 10, 25)
    for (let i = 0; i < 20_000; i++) {
      const r = next()
      if (r < 0.3) ms += Math.floor(next() * 1000)
      else if (r < 0.5) ms += 86_400_000 * (next() < 0.5 ? 1 : -1)
      else if (r < 0.7) ms = Math.floor(next() * 253_402_300_800_000)
      else ms += Math.floor(next() * 7_200_000)
      ms = Math.min(Math.max(ms, 0), 253_402_300_799_999)
      expect(isoTime(ms)).toBe(new Date(ms).toISOString())
    }
  })
})

describe('self-signed certificate', () => {
  it('is a valid X.509 certificate for localhost and 127.0.0.1, signed by its own key', () => {
    const { cert } = generateSelfSigned(new Date('2026-11-22T00:00:00Z'))
    const x = new X509Certificate(cert)
    expect(x.subject).toBe('CN=localhost')
    expect(x.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1')
    expect(x.checkHost('localhost')).toBe('localhost')
    expect(x.checkIP('127.0.0.1')).toBe('127.0.0.1')
    expect(x.verify(x.publicKey)).toBe(true)
    expect(x.validFrom).toBe('Nov 21 00:00:00 2026 GMT')
  })

  it('has a minimal positive serial whatever the random bytes (OpenSSL refuses padding)', () => {
    for (const fill of [0x00, 0x7f, 0x80, 0xff]) {
      const { cert, key } = generateSelfSigned(new Date(), Buffer.alloc(16, fill))
      expect(() => createSecureContext({ cert, key })).not.toThrow()
      const serial = new X509Certificate(cert).serialNumber
      expect(serial).toHaveLength(32)
      expect(serial.slice(0, 1)).toMatch(/^[4-7]$/)
    }
  })
})
