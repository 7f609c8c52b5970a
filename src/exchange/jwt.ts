import { constants, type KeyObject, verify } from 'node:crypto'
import { isoTime } from '../time.js'

/**
 * A compact JWS from a workload's identity provider, read without trusting it: the header
 * names the algorithm, the issuer's published keys decide. Headers that point at keys (`jku`,
 * `x5u`, `jwk`, `x5c`) are never followed: a token may not bring the key that vouches for it.
 */

export interface DecodedJwt {
  header: Record<string, unknown>
  claims: Record<string, unknown>
  /** `header.payload` as sent: what the signature covers. */
  signingInput: string
  signature: Buffer
  alg: string
  kid?: string
}

type Family = 'rsa' | 'pss' | 'ecdsa' | 'eddsa'

interface Scheme {
  family: Family
  /** The digest; none for EdDSA, which hashes inside the signature. */
  hash: string | null
  /** ES*: the curve the key must be on and the r||s length it gives. */
  curve?: string
  size?: number
}

const rsa = (bits: number): Scheme => ({ family: 'rsa', hash: `sha${bits}` })
const pss = (bits: number): Scheme => ({ family: 'pss', hash: `sha${bits}` })
const ecdsa = (bits: number, curve: string, size: number): Scheme => ({
  family: 'ecdsa',
  hash: `sha${bits}`,
  curve,
  size,
})

// A Map, not an object: `constructor` or `__proto__` as an alg must find nothing.
const schemes = new Map<string, Scheme>([
  ['RS256', rsa(256)],
  ['RS384', rsa(384)],
  ['RS512', rsa(512)],
  ['PS256', pss(256)],
  ['PS384', pss(384)],
  ['PS512', pss(512)],
  ['ES256', ecdsa(256, 'prime256v1', 64)],
  ['ES384', ecdsa(384, 'secp384r1', 96)],
  ['ES512', ecdsa(512, 'secp521r1', 132)],
  ['EdDSA', { family: 'eddsa', hash: null }],
])

/**
 * Public-key algorithms only: with a shared-secret one (HS*) anyone who holds the issuer's
 * public key, which is published, could sign.
 */
export const acceptedAlgorithms: readonly string[] = Object.freeze([...schemes.keys()])

/** RSA keys below this are refused: 1024-bit moduli are within reach of a determined attacker. */
const minimumModulusBits = 2048
const maxTokenLength = 16 * 1024
const base64urlShape = /^[A-Za-z0-9_-]*$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * The bytes of one base64url part, or undefined. Padding, other characters and stray trailing
 * bits are refused, so that a token has one spelling only.
 */
function part(text: string): Buffer | undefined {
  if (!base64urlShape.test(text)) return undefined
  const bytes = Buffer.from(text, 'base64url')
  return bytes.toString('base64url') === text ? bytes : undefined
}

function jsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(utf8.decode(bytes))
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
    return value as Record<string, unknown>
  } catch {
    return undefined
  }
}

/** Why the header's alg is refused, or undefined when it is one of acceptedAlgorithms. */
function algRefusal(alg: unknown): string | undefined {
  if (typeof alg !== 'string') return 'the token has no alg'
  if (alg.toLowerCase() === 'none') return 'the token is not signed (alg none)'
  if (/^HS(256|384|512)$/i.test(alg)) {
    return `the token is signed with a shared secret (${alg}), which is never accepted`
  }
  if (!schemes.has(alg)) return `the token's alg is not one of ${acceptedAlgorithms.join(', ')}`
  return undefined
}

/**
 * Parses a compact JWS (three base64url parts, JSON header and payload objects); the sentence
 * of what is wrong otherwise. Refuses alg none, HS*, any alg not in acceptedAlgorithms, `crit`
 * (no extension is understood, so none may be required), a header or payload that is not a
 * JSON object, and more than 16 KiB of token.
 */
export function decodeJwt(token: string): DecodedJwt | string {
  if (typeof token !== 'string' || token.length === 0) return 'the token is empty'
  if (token.length > maxTokenLength) return 'the token is longer than 16 KiB'
  const texts = token.split('.')
  const [headerText = '', payloadText = '', signatureText = ''] = texts
  const headerBytes = part(headerText)
  const payloadBytes = part(payloadText)
  const signature = part(signatureText)
  if (texts.length !== 3 || !headerBytes || !payloadBytes || !signature) {
    return 'the token is not three base64url parts separated by dots'
  }
  const header = jsonObject(headerBytes)
  if (header === undefined) return "the token's header is not a JSON object"
  const refusal = algRefusal(header.alg)
  if (refusal !== undefined) return refusal
  if ('crit' in header) return 'the token requires header extensions (crit) that are not understood'
  const { kid } = header
  if (kid !== undefined && typeof kid !== 'string') return "the token's kid is not a string"
  const claims = jsonObject(payloadBytes)
  if (claims === undefined) return "the token's payload is not a JSON object"
  if (signature.length === 0) return 'the token has no signature'
  const decoded: DecodedJwt = {
    header,
    claims,
    signingInput: `${headerText}.${payloadText}`,
    signature,
    alg: header.alg as string,
  }
  if (kid !== undefined) decoded.kid = kid
  return decoded
}

/**
 * Whether `key` is of the kind `alg` signs with: an RSA key of 2048 bits or more for RS* and
 * PS*, an EC key on the alg's own curve for ES*, an Ed25519 or Ed448 key for EdDSA. Checked
 * before verifying, since OpenSSL would happily verify ES384 over a P-256 key.
 */
export function keyFits(key: KeyObject, alg: string): boolean {
  const scheme = schemes.get(alg)
  if (scheme === undefined || key.type !== 'public') return false
  const type = key.asymmetricKeyType
  const details = key.asymmetricKeyDetails
  switch (scheme.family) {
    case 'rsa':
    case 'pss':
      return type === 'rsa' && (details?.modulusLength ?? 0) >= minimumModulusBits
    case 'ecdsa':
      return type === 'ec' && details?.namedCurve === scheme.curve
    case 'eddsa':
      return type === 'ed25519' || type === 'ed448'
  }
}

/**
 * Whether the signature holds under this key (a KeyObject from a JWK); false on any mismatch
 * of key type and alg (an RSA key never verifies an ES256 token, an EC P-256 key never
 * verifies ES384, etc.). Never throws.
 */
export function signatureHolds(jwt: DecodedJwt, key: KeyObject): boolean {
  const scheme = schemes.get(jwt.alg)
  if (scheme === undefined || !keyFits(key, jwt.alg)) return false
  if (scheme.size !== undefined && jwt.signature.length !== scheme.size) return false
  const data = Buffer.from(jwt.signingInput, 'latin1')
  try {
    switch (scheme.family) {
      case 'rsa':
      case 'eddsa':
        return verify(scheme.hash, data, key, jwt.signature)
      case 'pss': {
        // RFC 7518 3.5: the salt is as long as the digest; OpenSSL then checks it is.
        const saltLength = Number(jwt.alg.slice(2)) / 8
        const padding = constants.RSA_PKCS1_PSS_PADDING
        return verify(scheme.hash, data, { key, padding, saltLength }, jwt.signature)
      }
      case 'ecdsa':
        return verify(scheme.hash, data, { key, dsaEncoding: 'ieee-p1363' }, jwt.signature)
    }
  } catch {
    return false
  }
}

/** 9999-12-31T23:59:59Z: a NumericDate past it has no four-digit ISO year to be told by. */
const lastSeconds = 253_402_300_799

const isTime = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= lastSeconds

/**
 * Time claims: exp required (number), nbf and iat optional numbers; leeway in seconds. A token
 * lives while now < exp + leeway (RFC 7519 4.1.4: "before"), and from nbf - leeway on.
 * Returns undefined when fine, else a sentence ("the token expired at <ISO>", "the token is
 * not valid before <ISO>", "the token has no exp", "the token was issued in the future").
 */
export function timeRefusal(
  claims: Record<string, unknown>,
  nowMs: number,
  leewaySeconds: number,
): string | undefined {
  const { exp, nbf, iat } = claims
  if (exp === undefined) return 'the token has no exp'
  for (const [name, value] of [
    ['exp', exp],
    ['nbf', nbf],
    ['iat', iat],
  ] as const) {
    if (value !== undefined && !isTime(value)) return `the token's ${name} is not a time in seconds`
  }
  const leewayMs = leewaySeconds * 1000
  const expMs = (exp as number) * 1000
  if (nowMs >= expMs + leewayMs) return `the token expired at ${isoTime(expMs)}`
  if (nbf !== undefined && nowMs + leewayMs < (nbf as number) * 1000) {
    return `the token is not valid before ${isoTime((nbf as number) * 1000)}`
  }
  if (iat !== undefined && nowMs + leewayMs < (iat as number) * 1000) {
    return 'the token was issued in the future'
  }
  return undefined
}
