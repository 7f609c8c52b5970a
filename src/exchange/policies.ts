import { Refusal } from './form.js'

/**
 * An account's trust policies (docs/machines.md): which workload identities may exchange their
 * signed identity token (a JWT from GitHub Actions, GitLab, Kubernetes, a cloud) for a temporary
 * token of the account, and with what scopes for how long. Pure: no I/O.
 */
export interface TrustPolicy {
  /** The identity token's `iss`, exactly: an https URL, whose discovery document gives its keys. */
  issuer: string
  /** A value the token's `aud` must hold (a string or one of a list). */
  audience: string
  /** The token's `sub`, exactly or as a glob (`*` any run of characters). */
  subject: string
  /** Further claims, each a string the token's claim of that name must match as a glob. */
  claims?: Record<string, string>
  /** The most the temporary token may hold: what is asked is narrowed to these. */
  scopes: string[]
  /** The temporary token's life at most, in seconds (60 to 3,600). */
  maxTtl: number
}

export const maxPolicies = 20
export const maxClaims = 20
export const maxTtlSeconds = 3600
const minTtlSeconds = 60

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

const text = (v: unknown, max: number): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= max

/** An issuer as the exchange accepts one: https, a host, no credentials, query or fragment. */
export function isIssuer(value: string): boolean {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  return (
    url.protocol === 'https:' &&
    url.username === '' &&
    url.password === '' &&
    url.search === '' &&
    url.hash === '' &&
    !value.endsWith('/')
  )
}

const fields = ['issuer', 'audience', 'subject', 'claims', 'scopes', 'maxTtl']

/**
 * A list of trust policies as a request gives it, or the sentence that says what is wrong:
 * each known field of the right type, scopes among `known` (the scopes the account may hold).
 */
export function readTrustPolicies(
  input: unknown,
  known: ReadonlySet<string>,
): TrustPolicy[] | string {
  if (!Array.isArray(input)) return 'trust policies must be a list'
  if (input.length > maxPolicies) return `an account may have at most ${maxPolicies} trust policies`
  const policies: TrustPolicy[] = []
  for (const [i, item] of input.entries()) {
    const policy = readPolicy(item, `policies[${i}]`, known)
    if (typeof policy === 'string') return policy
    policies.push(policy)
  }
  return policies
}

function readPolicy(item: unknown, at: string, known: ReadonlySet<string>): TrustPolicy | string {
  if (!isRecord(item)) return `${at} must be an object`
  const extra = Object.keys(item).find((k) => !fields.includes(k))
  if (extra !== undefined) return `${at} has an unknown field ${extra}`
  const { issuer, audience, subject, claims, scopes, maxTtl } = item
  if (!text(issuer, 512) || !isIssuer(issuer)) {
    return `${at}.issuer must be an https URL without a trailing slash, query or fragment`
  }
  if (!text(audience, 256)) return `${at}.audience must be a text of 1 to 256 characters`
  if (!text(subject, 256)) return `${at}.subject must be a text (or glob) of 1 to 256 characters`
  let claimGlobs: Record<string, string> | undefined
  if (claims !== undefined) {
    if (!isRecord(claims)) return `${at}.claims must be an object of claim names and globs`
    const entries = Object.entries(claims)
    if (entries.length > maxClaims) return `${at}.claims may name at most ${maxClaims} claims`
    for (const [name, glob] of entries) {
      if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(name)) return `${at}.claims has a bad claim name`
      if (['iss', 'aud', 'sub', 'exp', 'nbf', 'iat', 'jti'].includes(name)) {
        return `${at}.claims.${name} is checked by the policy itself: use issuer, audience or subject`
      }
      if (!text(glob, 256))
        return `${at}.claims.${name} must be a text (or glob) of 1 to 256 characters`
    }
    claimGlobs = Object.fromEntries(entries) as Record<string, string>
  }
  if (!Array.isArray(scopes) || scopes.length === 0) return `${at}.scopes must be a list of scopes`
  const unknown = scopes.find((s) => typeof s !== 'string' || !known.has(s))
  if (unknown !== undefined)
    return `${at}.scopes: ${JSON.stringify(unknown)} is not available to this account`
  if (
    typeof maxTtl !== 'number' ||
    !Number.isInteger(maxTtl) ||
    maxTtl < minTtlSeconds ||
    maxTtl > maxTtlSeconds
  ) {
    return `${at}.maxTtl must be a whole number of seconds from ${minTtlSeconds} to ${maxTtlSeconds}`
  }
  const policy: TrustPolicy = {
    issuer,
    audience,
    subject,
    scopes: [...new Set(scopes as string[])],
    maxTtl,
  }
  if (claimGlobs !== undefined) policy.claims = claimGlobs
  return policy
}

/**
 * Whether `value` matches `glob`, where `*` stands for any run of characters (none included)
 * and every other character for itself, case and all. Linear: no regular expression is built
 * from a policy (a glob of many stars must not cost what backtracking would).
 */
export function globMatch(glob: string, value: string): boolean {
  let g = 0
  let v = 0
  let star = -1
  let mark = 0
  while (v < value.length) {
    if (g < glob.length && glob[g] !== '*' && glob[g] === value[v]) {
      g++
      v++
    } else if (g < glob.length && glob[g] === '*') {
      star = g++
      mark = v
    } else if (star !== -1) {
      g = star + 1
      v = ++mark
    } else return false
  }
  while (g < glob.length && glob[g] === '*') g++
  return g === glob.length
}

/** The longest claim value a glob is matched against: longer ones match nothing (cost bound). */
const maxClaimLength = 1024

/** A claim's value as a glob is matched against: strings as they are, numbers and booleans as JSON. */
const claimText = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : undefined

/** Why the verified claims fall outside a policy, or undefined when they are inside it. */
export function outsidePolicy(
  policy: TrustPolicy,
  claims: Record<string, unknown>,
): string | undefined {
  const aud = claims.aud
  const audiences = Array.isArray(aud) ? aud : [aud]
  if (!audiences.includes(policy.audience)) return 'audience'
  const sub = claims.sub
  if (typeof sub !== 'string' || sub.length > maxClaimLength || !globMatch(policy.subject, sub)) {
    return 'subject'
  }
  for (const [name, glob] of Object.entries(policy.claims ?? {})) {
    const value = claimText(claims[name])
    if (value === undefined || value.length > maxClaimLength || !globMatch(glob, value)) {
      return `claim ${name}`
    }
  }
  return undefined
}

/**
 * The first policy (in the account's order) whose audience, subject and claims the verified
 * claims have; else invalid_grant saying which of them no policy admits.
 */
export function admitting(
  policies: TrustPolicy[],
  claims: Record<string, unknown>,
  seen: Record<string, unknown>,
): [TrustPolicy, number] {
  const misses = new Set<string>()
  for (const policy of policies) {
    const miss = outsidePolicy(policy, claims)
    if (miss === undefined) return [policy, policies.indexOf(policy)]
    misses.add(miss)
  }
  const what =
    misses.has('audience') && misses.size === 1
      ? 'audience'
      : [...misses].filter((m) => m !== 'audience').join(', ')
  throw new Refusal(
    'invalid_grant',
    `no trust policy for this issuer admits the token's ${what}`,
    seen,
  )
}
