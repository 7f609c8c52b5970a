import { ApiError } from '../errors.js'
import type { NamedLimit } from '../ratelimit/named.js'
import type { Verdict } from '../verification/checkpoint.js'

/** Where the rate limit's headers go: a Fastify reply, or the fast path's header list. */
export interface HeaderSink {
  header(name: string, value: string): unknown
}

export const rateLimitHeaders = [
  'X-Rate-Limit-Interval',
  'X-Rate-Limit-Limit',
  'X-Rate-Limit-Reset',
  'RateLimit-Policy',
  'RateLimit',
  'Retry-After',
]

/** The texts of a limit that change only with the limit: kept, not made per request. */
interface Texts {
  interval: string
  limit: string
  /** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): `"<name>";q=<limit>;w=<s>`. */
  policy: string
  /** The start of `RateLimit`: `"<name>";r=`. */
  named: string
}

const texts = new WeakMap<NamedLimit, Texts>()
function textsOf(rule: NamedLimit): Texts {
  let t = texts.get(rule)
  if (t === undefined) {
    const seconds = String(Math.ceil(rule.duration / 1000))
    t = {
      interval: seconds,
      limit: String(rule.limit),
      policy: `"${rule.name}";q=${rule.limit};w=${seconds}`,
      named: `"${rule.name}";r=`,
    }
    texts.set(rule, t)
  }
  return t
}

// The window's end changes once a window: its text is kept, not made per request.
let lastReset = -1
let lastResetText = ''
const resetText = (resetMs: number) => {
  if (resetMs !== lastReset) {
    lastReset = resetMs
    lastResetText = String(Math.ceil(resetMs / 1000))
  }
  return lastResetText
}

/**
 * Writes a verdict's headers: Mapbox's X-Rate-Limit-* for the `requests` limit, the IETF
 * RateLimit-Policy and RateLimit for the limit closest to refusing. Past a limit, refuses the
 * request with 429 and Retry-After unless `enforce` is false (a request already refused for
 * another reason).
 */
export function writeLimits(sink: HeaderSink, verdict: Verdict, enforce = true): void {
  const { result, at } = verdict
  const closest = textsOf(verdict.applied.rule)
  // Most often the same limit (`requests` alone): one lookup.
  const rule = verdict.requestsRule as NamedLimit
  const requests = rule === verdict.applied.rule ? closest : textsOf(rule)
  const seconds = Math.max(0, Math.ceil((result.reset - at) / 1000))
  // Lowercase names and string values (see app.ts), one call each (no object to walk): headers
  // are dear on this path.
  sink.header('x-rate-limit-interval', requests.interval)
  sink.header('x-rate-limit-limit', requests.limit)
  sink.header('x-rate-limit-reset', resetText(verdict.requests.reset))
  sink.header('ratelimit-policy', closest.policy)
  sink.header('ratelimit', `${closest.named}${result.remaining};t=${seconds}`)
  if (verdict.allowed || !enforce) return
  sink.header('retry-after', String(Math.max(1, seconds)))
  throw new ApiError('tooManyRequests')
}
