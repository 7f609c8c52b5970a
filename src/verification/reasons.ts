import type { Outcome } from '../usage/outcomes.js'

/**
 * Why a verification came to its outcome, in words (docs/metering.md's table, said to the
 * person reading one row): the admin API, the CLI and the dashboard's Requests view say the same.
 */
const reasons: Record<Exclude<Outcome, 'rate_limited'>, string> = {
  valid: 'Valid',
  malformed: 'Not a token string (not a pk, sk or tk token)',
  invalid: 'The token has no valid signature of this service',
  expired:
    'The token has expired (a temporary token past its expires, or a token past its end of life)',
  revoked: 'The token was revoked (deleted, or its account disabled)',
  url_not_allowed: "The page's URL is not among the token's allowed URLs",
  ip_not_allowed: "The client's address is not among the token's allowed IPs",
  scope_missing: 'The token lacks the scope the route needs',
  credits_exhausted: 'The credits of the token (or of its account) are used up',
}

/** The words of an outcome; `limit`: the name of the limit that refused a `rate_limited` one. */
export function reasonOf(outcome: string, limit: string | null): string {
  if (outcome === 'rate_limited') {
    return limit === null ? 'Refused by a rate limit' : `Refused by the rate limit "${limit}"`
  }
  // A row written by a later version may name an outcome this one does not know: its name.
  return Object.hasOwn(reasons, outcome) ? reasons[outcome as keyof typeof reasons] : outcome
}
