import { durationBounds, type LimitRule } from './limiter.js'

/**
 * A named rate limit (docs/ratelimits.md): at most `limit` in each window of `duration`
 * milliseconds, a request counting `cost` (1 when neither the limit nor the caller says).
 */
export interface NamedLimit extends LimitRule {
  readonly name: string
  readonly cost?: number
}

/** The contract's per-account limit: `RATE_LIMIT_PER_MINUTE` per 60 s unless a plan or account sets it. */
export const requestsName = 'requests'

/** Names travel in headers and metrics labels: short, and nothing a header or label must quote. */
export const limitNamePattern = /^[a-z0-9][a-z0-9._-]{0,63}$/

/** At most this many limits in one list (Unkey's bound for one key). */
export const maxLimits = 50

/** The largest limit and cost (a count in one window). */
export const maxLimit = 1_000_000_000

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

const whole = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max

/**
 * A list of named limits as a request or the catalog gives it, or the sentence that says what
 * is wrong with it: each `{name, limit, duration, cost?}` and nothing else, names unique.
 */
export function readNamedLimits(input: unknown, where = 'limits'): NamedLimit[] | string {
  if (!Array.isArray(input)) return `${where} must be a list`
  if (input.length > maxLimits) return `${where} may hold at most ${maxLimits} limits`
  const names = new Set<string>()
  const limits: NamedLimit[] = []
  for (const [i, item] of input.entries()) {
    const at = `${where}[${i}]`
    if (!isRecord(item)) return `${at} must be an object`
    const extra = Object.keys(item).find((k) => !['name', 'limit', 'duration', 'cost'].includes(k))
    if (extra !== undefined) return `${at} has an unknown field ${extra}`
    const { name, limit, duration, cost } = item
    if (typeof name !== 'string' || !limitNamePattern.test(name)) {
      return `${at}.name must match ${limitNamePattern}`
    }
    if (names.has(name)) return `${at}.name ${name} is given twice`
    names.add(name)
    if (!whole(limit, 1, maxLimit))
      return `${at}.limit must be a whole number from 1 to ${maxLimit}`
    if (!whole(duration, durationBounds.min, durationBounds.max)) {
      return `${at}.duration must be a whole number of milliseconds from ${durationBounds.min} to ${durationBounds.max}`
    }
    if (cost !== undefined && !whole(cost, 0, maxLimit)) {
      return `${at}.cost must be a whole number from 0 to ${maxLimit}`
    }
    limits.push(cost === undefined ? { name, limit, duration } : { name, limit, duration, cost })
  }
  return limits
}

/**
 * What holds, in order: `base`'s limits, each replaced by a later list's limit of the same name,
 * then the later lists' other limits. An account's own replace its plan's, its plan's the
 * service's `requests`.
 */
export function mergeLimits(
  ...lists: readonly (readonly NamedLimit[] | undefined)[]
): NamedLimit[] {
  const byName = new Map<string, NamedLimit>()
  for (const list of lists) for (const l of list ?? []) byName.set(l.name, l)
  return [...byName.values()]
}

/** The service's `requests` limit: `perMinute` per 60 s (RATE_LIMIT_PER_MINUTE). */
export const requestsLimit = (perMinute: number): NamedLimit =>
  Object.freeze({ name: requestsName, limit: perMinute, duration: 60_000 })
