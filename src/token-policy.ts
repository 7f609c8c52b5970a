/**
 * An account's token policy: the hygiene its tokens must keep. Set by an owner (stored on the
 * account) and by the operator per plan (the catalog's `plans.<name>.policy`); what holds is the
 * stricter of the two, key by key (`strictest`). Every key is optional: absent, no rule.
 */
export interface TokenPolicy {
  /** New sk tokens must carry an `expiresAt` at most this many days ahead (1-3650). */
  maxSkLifetimeDays?: number
  /** New pk tokens must carry at least one allowed URL. */
  pkAllowedUrls?: boolean
  /** pk and sk tokens unused this many days are deleted, warned 7 days before (8-3650). */
  idleDays?: number
  /** A roll's grace, the old string's life after it, at most this many hours (0-24). */
  rollGraceMaxHours?: number
}

export const policyKeys = [
  'maxSkLifetimeDays',
  'pkAllowedUrls',
  'idleDays',
  'rollGraceMaxHours',
] as const

/** The whole-number keys and their bounds. */
const bounds = {
  maxSkLifetimeDays: [1, 3650],
  idleDays: [8, 3650],
  rollGraceMaxHours: [0, 24],
} as const

/**
 * A policy from JSON (the admin API's body, a catalog entry, a stored column): the problem as a
 * sentence, or the policy. `null` for a key, like its absence, means no rule; `false` too for
 * pkAllowedUrls, which is then left out.
 */
export function readTokenPolicy(value: unknown): TokenPolicy | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'a token policy is an object of maxSkLifetimeDays, pkAllowedUrls, idleDays and rollGraceMaxHours'
  }
  const policy: TokenPolicy = {}
  for (const [key, v] of Object.entries(value)) {
    if (!(policyKeys as readonly string[]).includes(key)) return `${key} is not a token policy`
    if (v === null) continue
    if (key === 'pkAllowedUrls') {
      if (typeof v !== 'boolean') return 'pkAllowedUrls must be true or false'
      if (v) policy.pkAllowedUrls = true
      continue
    }
    const [min, max] = bounds[key as keyof typeof bounds]
    if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
      return `${key} must be a whole number from ${min} to ${max}`
    }
    policy[key as keyof typeof bounds] = v as number
  }
  return policy
}

const stricterNumber = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

/** The policy that holds under both: the lower of two numbers, either's pkAllowedUrls. */
export function strictest(a: TokenPolicy, b: TokenPolicy): TokenPolicy {
  const out: TokenPolicy = {}
  const max = stricterNumber(a.maxSkLifetimeDays, b.maxSkLifetimeDays)
  if (max !== undefined) out.maxSkLifetimeDays = max
  if (a.pkAllowedUrls === true || b.pkAllowedUrls === true) out.pkAllowedUrls = true
  const idle = stricterNumber(a.idleDays, b.idleDays)
  if (idle !== undefined) out.idleDays = idle
  const grace = stricterNumber(a.rollGraceMaxHours, b.rollGraceMaxHours)
  if (grace !== undefined) out.rollGraceMaxHours = grace
  return out
}

/**
 * The keys `own` sets looser than `floor` (the plan's) does, as sentences: such a value would
 * have no effect, so saving it is refused rather than misleading. A key `own` leaves out is the
 * plan's.
 */
export function looserThan(own: TokenPolicy, floor: TokenPolicy): string[] {
  const out: string[] = []
  const over = (key: 'maxSkLifetimeDays' | 'idleDays' | 'rollGraceMaxHours', unit: string) => {
    const limit = floor[key]
    const value = own[key]
    if (limit !== undefined && value !== undefined && value > limit) {
      out.push(`the plan sets ${key} to ${limit} ${unit}: at most that`)
    }
  }
  over('maxSkLifetimeDays', 'days')
  over('idleDays', 'days')
  over('rollGraceMaxHours', 'hours')
  return out
}

/** Whether the policy has no rule at all (the common case, checked first on the hot path). */
export const isEmptyPolicy = (p: TokenPolicy | undefined): boolean =>
  p === undefined ||
  (p.maxSkLifetimeDays === undefined &&
    p.pkAllowedUrls !== true &&
    p.idleDays === undefined &&
    p.rollGraceMaxHours === undefined)
