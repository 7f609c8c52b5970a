import { createHmac, timingSafeEqual } from 'node:crypto'
import { jsonString } from '../json.js'

/**
 * Token strings (CONTRACT.md section 3): `<usage>.<payload>.<signature>`, payload unpadded
 * base64url JSON, signature HMAC-SHA256 over `<usage>.<payload>` truncated to 16 bytes.
 * No I/O here.
 */

export type Usage = 'pk' | 'sk' | 'tk'

export interface PermanentPayload {
  u: string
  a: string
}

export interface TemporaryPayload {
  u: string
  exp: number
  iat: number
  scopes: string[]
  client: 'api'
}

export type ParsedToken =
  | { usage: 'pk' | 'sk'; payload: { u: string; a?: unknown }; signed: string; signature: string }
  | { usage: 'tk'; payload: TemporaryPayload; signed: string; signature: string }

const signatureBytes = 16
const base64url = /^[A-Za-z0-9_-]+$/
const signatureLength = 22
/** 9999-12-31T23:59:59Z: the last second an ISO 8601 timestamp of four-digit years can say. */
const lastEpochSecond = 253_402_300_799

/**
 * A time a `tk` can carry: one that the answers (ISO timestamps) can say. Any other number,
 * however a forger writes it (1e300, -1, NaN from a parser), makes the string malformed.
 */
const isEpochSeconds = (value: unknown): value is number =>
  typeof value === 'number' && value >= 0 && value <= lastEpochSecond

export function sign(signed: string, secret: Buffer): string {
  return createHmac('sha256', secret)
    .update(signed)
    .digest()
    .subarray(0, signatureBytes)
    .toString('base64url')
}

export function encodeToken(
  usage: Usage,
  payload: PermanentPayload | TemporaryPayload,
  secret: Buffer,
): string {
  // A pk/sk's payload, `JSON.stringify({ u, a })`, written by hand (see jsonString).
  const json =
    'a' in payload
      ? `{"u":${jsonString(payload.u)},"a":${jsonString(payload.a)}}`
      : JSON.stringify(payload)
  const signed = `${usage}.${Buffer.from(json).toString('base64url')}`
  return `${signed}.${sign(signed, secret)}`
}

/** Parses without verifying; undefined when the string is not a token (TokenMalformed). */
export function parseToken(token: string): ParsedToken | undefined {
  const parts = token.split('.')
  if (parts.length !== 3) return undefined
  const [usage, encoded, signature] = parts as [string, string, string]
  if (usage !== 'pk' && usage !== 'sk' && usage !== 'tk') return undefined
  if (!base64url.test(encoded)) return undefined
  let payload: unknown
  try {
    payload = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined
  const p = payload as Record<string, unknown>
  if (typeof p.u !== 'string') return undefined
  const signed = `${usage}.${encoded}`
  if (usage !== 'tk') return { usage, payload: { u: p.u, a: p.a }, signed, signature }
  if (!isEpochSeconds(p.exp) || !isEpochSeconds(p.iat)) return undefined
  const scopes = Array.isArray(p.scopes) ? p.scopes.filter((s) => typeof s === 'string') : []
  return {
    usage,
    payload: { u: p.u, exp: p.exp, iat: p.iat, scopes, client: 'api' },
    signed,
    signature,
  }
}

/** Constant-time check of a parsed token's signature against one secret. */
export function signatureMatches(parsed: ParsedToken, secret: Buffer): boolean {
  if (parsed.signature.length !== signatureLength || !base64url.test(parsed.signature)) return false
  // Compare the encoded text, not decoded bytes: the last base64 character carries four
  // padding bits, and a string differing only there must not validate.
  const expected = sign(parsed.signed, secret)
  return timingSafeEqual(Buffer.from(parsed.signature), Buffer.from(expected))
}
