import type { IncomingHttpHeaders } from 'node:http'
import type { FailureReason } from './answers.js'

/** The status, headers and `{message, details}` body a refusal is answered with. */
export interface Refusal {
  status: 401 | 403 | 429 | 503
  headers: Record<string, string>
  body: { message: string; details: string }
}

const bearer = { 'www-authenticate': 'Bearer' }
const unauthorized = (details: string): Refusal => ({
  status: 401,
  headers: bearer,
  body: { message: 'Unauthorized', details },
})

const refusalsByReason: Record<FailureReason | 'TokenMissing', Refusal> = {
  TokenMissing: unauthorized('an access token is required'),
  TokenMalformed: unauthorized('the access token is malformed'),
  TokenInvalid: unauthorized('the access token is invalid'),
  TokenExpired: unauthorized('the access token has expired'),
  TokenRevoked: unauthorized('the access token has been revoked'),
  MissingScope: {
    status: 403,
    headers: { 'www-authenticate': 'Bearer error="insufficient_scope"' },
    body: { message: 'Forbidden', details: 'the access token lacks a scope this request needs' },
  },
  UrlNotAllowed: {
    status: 403,
    headers: {},
    body: { message: 'Forbidden', details: 'the access token may not be used from this URL' },
  },
  IpNotAllowed: {
    status: 403,
    headers: {},
    body: { message: 'Forbidden', details: 'the access token may not be used from this address' },
  },
  CreditsExhausted: {
    status: 429,
    headers: {},
    body: { message: 'Too Many Requests', details: 'the access token has no credits left' },
  },
  RateLimited: {
    status: 429,
    headers: {},
    body: { message: 'Too Many Requests', details: 'the access token is over a rate limit' },
  },
  TesseraUnavailable: {
    status: 503,
    headers: { 'retry-after': '1' },
    body: { message: 'Service Unavailable', details: 'the access token cannot be checked now' },
  },
}

export function refusalFor(reason: FailureReason | 'TokenMissing'): Refusal {
  return refusalsByReason[reason]
}

/** `Authorization: Bearer <token>`, else the first `access_token` of the query (Tessera's way). */
export function tokenFrom(
  headers: IncomingHttpHeaders,
  url: string | undefined,
): string | undefined {
  const auth = headers.authorization
  if (auth !== undefined && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ') {
    const token = auth.slice(7).trim()
    if (token !== '') return token
  }
  if (url === undefined) return undefined
  const q = url.indexOf('?')
  if (q === -1) return undefined
  const token = new URLSearchParams(url.slice(q + 1)).get('access_token')
  return token === null || token === '' ? undefined : token
}

/** A header's single value (Node joins or lists repeated ones). */
export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}
