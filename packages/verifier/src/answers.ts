/** Why a token does not open a request. */
export type FailureReason =
  /** Retrieve codes: the string does not parse, its signature fails, a tk past its `exp`, a
   * deleted token or one of a disabled or deleted account. */
  | 'TokenMalformed'
  | 'TokenInvalid'
  | 'TokenExpired'
  | 'TokenRevoked'
  /** The token lacks a scope the request needs. */
  | 'MissingScope'
  /** The token has allowedUrls and the request's Origin/Referer matches none of them. */
  | 'UrlNotAllowed'
  /** The token has allowedIps and the request's client address is in none of them. */
  | 'IpNotAllowed'
  /** The token (or its account) carries credits and too few are left for the cost. */
  | 'CreditsExhausted'
  /** A rate limit on the token (its account's or its own) has nothing left in its window:
   * `ratelimit` names it. */
  | 'RateLimited'
  /** Tessera could not answer and nothing usable was cached: fail closed. */
  | 'TesseraUnavailable'

export type TokenUsage = 'pk' | 'sk' | 'tk'

/** A token that opens the request. Shared and frozen: do not mutate. */
export interface VerifiedToken {
  readonly valid: true
  /** The account (username) the token belongs to. */
  readonly account: string
  readonly usage: TokenUsage
  readonly scopes: readonly string[]
  /** The token's id (the `{token_id}` of the Tokens API); a tk carries none. */
  readonly id: string | undefined
  readonly clientId: string | undefined
  /** Issued at, epoch seconds. */
  readonly iat: number | undefined
  /** Expiry, epoch seconds: a tk's, or a pk/sk's end of life (`expiresAt`) when it has one. */
  readonly exp: number | undefined
  /** The token's restriction; undefined when it has none. */
  readonly allowedUrls: readonly string[] | undefined
  /** The IP ranges it may be used from; undefined when it has none. */
  readonly allowedIps: readonly string[] | undefined
}

export interface RefusedToken {
  readonly valid: false
  readonly reason: FailureReason
  /** RateLimited: the name of the limit that refused (e.g. `requests`). */
  readonly ratelimit?: string
}

export type Verification = VerifiedToken | RefusedToken

/** What a request brings to a verification. */
export interface VerifyOptions {
  /** Scope(s) the request needs: all of them. */
  scope?: string | readonly string[]
  /** The request's `Origin` header. */
  origin?: string | undefined
  /** The request's `Referer` header. */
  referer?: string | undefined
  /** The client's address (required to pass a token restricted to IP ranges). */
  ip?: string | undefined
  /**
   * The request's id (its `X-Request-Id`), for the row of a refusal in Tessera's verification
   * log: sent when it is 1 to 64 of `A-Za-z0-9._:-`.
   */
  requestId?: string | undefined
  /**
   * Credits this verification spends when the token or its account carries credits: a whole
   * number, default 1; 0 checks without spending (anything else throws a TypeError for such a
   * token). Tokens without credits spend nothing.
   */
  cost?: number
}

const refused = (reason: FailureReason): RefusedToken => Object.freeze({ valid: false, reason })

/** One shared object per reason, so that refusing allocates nothing. */
export const refusals: Readonly<Record<FailureReason, RefusedToken>> = Object.freeze({
  TokenMalformed: refused('TokenMalformed'),
  TokenInvalid: refused('TokenInvalid'),
  TokenExpired: refused('TokenExpired'),
  TokenRevoked: refused('TokenRevoked'),
  MissingScope: refused('MissingScope'),
  UrlNotAllowed: refused('UrlNotAllowed'),
  IpNotAllowed: refused('IpNotAllowed'),
  CreditsExhausted: refused('CreditsExhausted'),
  RateLimited: refused('RateLimited'),
  TesseraUnavailable: refused('TesseraUnavailable'),
})

/** A cost in credits, checked: a whole number, 0 or more (undefined: the default, 1). */
export function checkCost(cost: number | undefined): number {
  const n = cost ?? 1
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new TypeError(`cost must be a whole number, 0 or more, not ${n}`)
  }
  return n
}

/** A verification's cost in credits (default 1); a TypeError for anything but a whole number >= 0. */
export const costOf = (options: VerifyOptions | undefined): number => checkCost(options?.cost)
