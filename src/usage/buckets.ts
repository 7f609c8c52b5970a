import type { Resolution } from '../db/usage-reads.js'
import { type OutcomeCounts, outcomes } from './outcomes.js'

/** [from, to) in epoch ms. */
export interface UsageRange {
  from: number
  to: number
  /**
   * The account's creation (epoch ms): the buckets before its own are not counted, as they may
   * be those of a former account of the same name (or a verifier's counts for a name not yet
   * taken). See `partsOf` for the creation's own bucket.
   */
  since?: number
}

/** `rate_limited` by limit name: `{"<name>": n}`, names that counted none left out. */
export type LimitedBy = Record<string, number>

/** Counts by outcome of one account and token in one minute (a verifier's report). */
export interface UsageRow {
  /** The minute's start, epoch ms (floored to the minute when it is not one). */
  minute: number
  account: string
  /** '' for a temporary token or a string no token can be told from. */
  tokenId: string
  outcomes: OutcomeCounts
  /** The split of `outcomes.rate_limited` by limit name (at most it, in sum), where given. */
  limited?: LimitedBy
}

export interface SeriesQuery extends UsageRange {
  resolution: Resolution
  token?: string
  /** Buckets a page (default 100). */
  limit?: number
  /** The start (ISO) of the last bucket of the previous page. */
  after?: string
}

export interface Bucket {
  start: string
  outcomes: OutcomeCounts
  /** Its rate_limited by limit name, where any (the API's own name for it). */
  rate_limited_by?: LimitedBy
}

const widthMs: Record<Resolution, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }
/** A bucket's key (the `at` column) is this long a prefix of its start in ISO 8601. */
const keyLength: Record<Resolution, number> = { minute: 16, hour: 13, day: 10 }
const keyEnd: Record<Resolution, string> = {
  minute: ':00.000Z',
  hour: ':00:00.000Z',
  day: 'T00:00:00.000Z',
}

/** The key of the bucket `ms` falls in. */
export const bucketKey = (resolution: Resolution, ms: number) =>
  new Date(ms).toISOString().slice(0, keyLength[resolution])

/** A bucket's start in ISO 8601, from its key. */
export const startOf = (resolution: Resolution, at: string) => `${at}${keyEnd[resolution]}`

/** How far ahead a range may end: past it, `to` is brought back (a year 9999 has no bucket). */
export const aheadMs = 86_400_000

/** The keys of the buckets that overlap [from, to): `fromAt <= at < toAt`. */
export function bucketRange(resolution: Resolution, { from, to }: UsageRange) {
  const width = widthMs[resolution]
  const end = Math.ceil(to / width) * width
  return { fromAt: bucketKey(resolution, from), toAt: bucketKey(resolution, end) }
}

const finer: Partial<Record<Resolution, Resolution>> = { hour: 'minute', day: 'hour' }

export interface ReadParts {
  /** The creation's bucket, as the sum of the finer buckets from the creation's on. */
  first?: { at: string; resolution: Resolution; fromAt: string; toAt: string }
  /** The other buckets (all of them without `first`). */
  rest: { fromAt: string; toAt: string }
}

/**
 * The buckets of `resolution` a read of an account sums: those that overlap [from, to), `to`
 * no later than a day after `now`, and none before the account's creation (`since`). The
 * creation's own bucket may hold a former account's counts from before it: it is read from the
 * finer buckets from the creation's on (a day from its hours, an hour from its minutes) while
 * `retainedDays` keeps those, else whole (docs/metering.md, "A name used again").
 */
export function partsOf(
  resolution: Resolution,
  q: UsageRange,
  now: number,
  retainedDays: Record<Resolution, number>,
): ReadParts {
  const to = Math.min(q.to, now + aheadMs)
  const from = Math.min(Math.max(q.from, q.since ?? q.from), to)
  const rest = bucketRange(resolution, { from, to })
  const fine = finer[resolution]
  const since = q.since
  if (since === undefined || fine === undefined || rest.fromAt >= rest.toAt) return { rest }
  const at = bucketKey(resolution, since)
  if (at !== rest.fromAt || since < now - retainedDays[fine] * widthMs.day) return { rest }
  const width = widthMs[resolution]
  const next = Math.floor(since / width) * width + width
  const first = {
    at,
    resolution: fine,
    fromAt: bucketKey(fine, since),
    toAt: bucketKey(fine, next),
  }
  return { first, rest: { fromAt: bucketKey(resolution, next), toAt: rest.toAt } }
}

/** Counts by outcome index, from an object that may leave outcomes out. */
export const countsOf = (o: OutcomeCounts): number[] => outcomes.map((name) => o[name] ?? 0)

/** Adds `counts` into `into`, outcome by outcome. */
export function addCounts(into: number[], counts: readonly number[]): void {
  for (const [i, n] of counts.entries()) into[i] = (into[i] ?? 0) + n
}

/** The outcomes of a counts array that are not 0, in the order of `outcomes`. */
export function outcomesOf(counts: readonly number[]): OutcomeCounts {
  const out: OutcomeCounts = {}
  for (const [i, name] of outcomes.entries()) {
    const n = counts[i] ?? 0
    if (n !== 0) out[name] = n
  }
  return out
}
