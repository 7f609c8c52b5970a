/**
 * What a verification came to, wherever it happened (retrieve, introspection, the token API's
 * guard, a verifier): the names of the admin API and of the `usage_*` tables' columns, in the
 * order of their indexes in a counts array.
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

/** An outcome's index in a counts array. */
export const outcomeIndex = Object.fromEntries(outcomes.map((o, i) => [o, i])) as Record<
  Outcome,
  number
>

/** Counts by outcome; an outcome never seen may be left out. */
export type OutcomeCounts = Partial<Record<Outcome, number>>
