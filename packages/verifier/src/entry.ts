import type { AllowedUrls } from './allowed-urls.js'
import { refusals, type Verification, type VerifyOptions } from './answers.js'
import type { Pool } from './credits.js'
import type { LimitPool } from './ratelimits.js'
import type { MeterKey } from './usage.js'

/** A cached answer of Tessera about one token string, with what checking it needs precomputed. */
export interface Entry {
  readonly token: string
  /** Replaced by TokenExpired once a tk's exp has passed. */
  answer: Verification
  readonly scopes: ReadonlySet<string>
  readonly urls: AllowedUrls | undefined
  /** A token restricted to IP ranges: whether a client address is in them. */
  readonly ips: ((ip: string) => boolean) | undefined
  /** When the entry stops being usable, epoch ms. */
  expiresAt: number
  /** Index keys: the token id and the account, when known. */
  readonly id: string | undefined
  readonly account: string | undefined
  /** Whom its decisions are counted for; undefined: not counted (TesseraUnavailable). */
  readonly meter: MeterKey | undefined
  /** The credits a verification spends (the token's or its account's); undefined: none. */
  readonly pool: Pool | undefined
  /** The rate limits a verification takes (its account's and its own); undefined: none listed. */
  readonly limits: LimitPool | undefined
}

/** What a lookup answers when Tessera cannot: never cached. */
export const unavailable: Entry = Object.freeze({
  token: '',
  answer: refusals.TesseraUnavailable,
  scopes: new Set<string>(),
  urls: undefined,
  ips: undefined,
  expiresAt: 0,
  id: undefined,
  account: undefined,
  meter: undefined,
  pool: undefined,
  limits: undefined,
})

/**
 * A cached entry past its time: a tk past its exp becomes TokenExpired (true: kept, it answers
 * that without asking); anything else is to be dropped, and asked again.
 */
export function keptPastExpiry(entry: Entry, now: number, negativeTtlMs: number): boolean {
  const answer = entry.answer
  if (!answer.valid || answer.usage !== 'tk' || answer.exp === undefined) return false
  if (answer.exp * 1000 > now) return false
  entry.answer = refusals.TokenExpired
  entry.expiresAt = now + Math.max(negativeTtlMs, 60_000)
  return true
}

/** The checks of one request against a cached answer: IP ranges, allowed URLs, then scopes. */
export function check(entry: Entry, options: VerifyOptions | undefined): Verification {
  const answer = entry.answer
  if (!answer.valid) return answer
  if (entry.ips !== undefined) {
    const ip = options?.ip
    if (ip === undefined || !entry.ips(ip)) return refusals.IpNotAllowed
  }
  if (entry.urls !== undefined) {
    if (options === undefined || !entry.urls.allows(options.origin, options.referer)) {
      return refusals.UrlNotAllowed
    }
  }
  const scope = options?.scope
  if (scope !== undefined) {
    if (typeof scope === 'string') {
      if (!entry.scopes.has(scope)) return refusals.MissingScope
    } else {
      for (const s of scope as readonly string[]) {
        if (!entry.scopes.has(s)) return refusals.MissingScope
      }
    }
  }
  return answer
}
