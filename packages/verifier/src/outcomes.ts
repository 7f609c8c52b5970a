import type { FailureReason } from './answers.js'

/**
 * What a verification came to, as Tessera's usage counts name them (its `src/usage/outcomes.ts`,
 * repeated here: this package is published on its own), in the order of a counts array.
 */
export const outcomes = [
  'valid',
  'malformed',
  'invalid',
  'expired',
  'revoked',
  'rate_limited',
  'url_not_allowed',
  'ip_not_allowed',
  'scope_missing',
  'credits_exhausted',
] as const

export type Outcome = (typeof outcomes)[number]

export const valid = 0
/** The index of `rate_limited`. */
export const rateLimited = 5

/** A refusal's outcome index; -1: not counted (TesseraUnavailable). */
export const outcomeOfReason: Readonly<Record<FailureReason, number>> = Object.freeze({
  TokenMalformed: 1,
  TokenInvalid: 2,
  TokenExpired: 3,
  TokenRevoked: 4,
  RateLimited: 5,
  UrlNotAllowed: 6,
  IpNotAllowed: 7,
  MissingScope: 8,
  CreditsExhausted: 9,
  TesseraUnavailable: -1,
})
