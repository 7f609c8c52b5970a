import type { Db } from '../db/database.js'
import { type TokenActivity, usageRepo } from '../db/usage.js'
import { type LimitedSum, limitedReads } from '../db/usage-limited.js'
import { type Resolution, usageReads } from '../db/usage-reads.js'
import {
  addCounts,
  type Bucket,
  bucketKey,
  type LimitedBy,
  outcomesOf,
  partsOf,
  type SeriesQuery,
  startOf,
  type UsageRange,
} from './buckets.js'
import { type OutcomeCounts, outcomeIndex, outcomes } from './outcomes.js'

const dayMs = 86_400_000
/** Days of hourly counts `activity` answers (the token page's chart). */
export const usageDays = 30

const limitedAt = outcomeIndex.rate_limited

/** Sums by name as an object, names in order. */
function byName(sums: readonly LimitedSum[]): LimitedBy {
  const out = new Map<string, number>()
  for (const s of sums) out.set(s.name, (out.get(s.name) ?? 0) + s.count)
  return Object.fromEntries([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

/** `what` with `rate_limited_by` when the split has any name. */
const withSplit = <T extends object>(what: T, split: LimitedBy | undefined) =>
  split === undefined || Object.keys(split).length === 0
    ? what
    : { ...what, rate_limited_by: split }

/**
 * The usage as stored (docs/metering.md): an account's buckets, sums and tokens by outcome, with
 * `rate_limited` split by limit name where any was (read only then: most ranges have none), and
 * a token's activity. This instance's counts of the current minute are not in them until the
 * next flush.
 */
export class UsageReads {
  constructor(
    protected readonly db: Db,
    protected readonly now: () => number,
    /** Days each resolution is kept (config.usage.retentionDays). */
    readonly retentionDays: { minute: number; hour: number; day: number },
  ) {}

  /** Buckets of an account (or one of its tokens) with any count, oldest first, a page of them;
   * `next` is the cursor of the page after, when there is one. */
  async series(account: string, q: SeriesQuery): Promise<{ series: Bucket[]; next?: string }> {
    const limit = q.limit ?? 100
    const { first, rest } = partsOf(q.resolution, q, this.now(), this.retentionDays)
    const after = q.after === undefined ? undefined : bucketKey(q.resolution, Date.parse(q.after))
    const rows: { at: string; counts: number[] }[] = []
    const split = new Map<string, LimitedBy>()
    const token = q.token
    if (first !== undefined && (after === undefined || after < first.at)) {
      const counts = await usageReads.totals(this.db, { account, ...first, token })
      if (counts.some((n) => n !== 0)) rows.push({ at: first.at, counts })
      if ((counts[limitedAt] ?? 0) > 0) {
        const sums = await limitedReads.sums(this.db, { account, ...first, token, by: 'none' })
        split.set(first.at, byName(sums))
      }
    }
    const stored = await usageReads.series(this.db, {
      account,
      ...rest,
      token,
      after,
      limit: limit + 1,
      resolution: q.resolution,
    })
    rows.push(...stored)
    const page = rows.slice(0, limit)
    const ats = page
      .filter((r) => r.at !== first?.at && (r.counts[limitedAt] ?? 0) > 0)
      .map((r) => r.at)
    if (ats.length > 0) {
      const range = { account, ...rest, resolution: q.resolution, token }
      const sums = await limitedReads.sums(this.db, { ...range, by: 'at', ats })
      for (const at of ats) split.set(at, byName(sums.filter((s) => s.at === at)))
    }
    const series = page.map((r) =>
      withSplit(
        { start: startOf(q.resolution, r.at), outcomes: outcomesOf(r.counts) },
        split.get(r.at),
      ),
    )
    const last = series.at(-1)
    return rows.length > limit && last !== undefined ? { series, next: last.start } : { series }
  }

  /** The ranges of the tables a read of the buckets of `resolution` sums (see `partsOf`). */
  private ranges(account: string, resolution: Resolution, q: UsageRange) {
    const { first, rest } = partsOf(resolution, q, this.now(), this.retentionDays)
    const ranges = [{ account, resolution, ...rest }]
    if (first !== undefined) ranges.push({ account, ...first })
    return ranges
  }

  /** The sums over the buckets of `resolution` (default: hours, or days past their retention)
   * that overlap [from, to). */
  async totals(
    account: string,
    q: UsageRange & { token?: string; resolution?: Resolution },
  ): Promise<OutcomeCounts> {
    const resolution = q.resolution ?? this.coarseEnough(q.from)
    const sums = new Array<number>(outcomes.length).fill(0)
    for (const range of this.ranges(account, resolution, q)) {
      addCounts(sums, await usageReads.totals(this.db, { ...range, token: q.token }))
    }
    return outcomesOf(sums)
  }

  /** `totals`, and their rate_limited by limit name where any (read only then). */
  async totalsSplit(
    account: string,
    q: UsageRange & { token?: string; resolution?: Resolution },
  ): Promise<{ totals: OutcomeCounts; rate_limited_by?: LimitedBy }> {
    const totals = await this.totals(account, q)
    if ((totals.rate_limited ?? 0) === 0) return { totals }
    return withSplit({ totals }, await this.limitedTotals(account, q))
  }

  /** `totals`' rate_limited by limit name (names in order; `{}` when none). */
  async limitedTotals(
    account: string,
    q: UsageRange & { token?: string; resolution?: Resolution },
  ): Promise<LimitedBy> {
    const resolution = q.resolution ?? this.coarseEnough(q.from)
    const sums: LimitedSum[] = []
    for (const range of this.ranges(account, resolution, q)) {
      sums.push(...(await limitedReads.sums(this.db, { ...range, token: q.token, by: 'none' })))
    }
    return byName(sums)
  }

  /** Each token's sums (the token '' included), the most counted first. */
  async byToken(
    account: string,
    q: UsageRange & { resolution?: Resolution },
  ): Promise<{ token: string; outcomes: OutcomeCounts; rate_limited_by?: LimitedBy }[]> {
    const resolution = q.resolution ?? this.coarseEnough(q.from)
    const sums = new Map<string, number[]>()
    const split: LimitedSum[] = []
    for (const range of this.ranges(account, resolution, q)) {
      const found = await usageReads.byToken(this.db, range)
      for (const r of found) {
        const seen = sums.get(r.tokenId)
        if (seen === undefined) sums.set(r.tokenId, r.counts)
        else addCounts(seen, r.counts)
      }
      if (found.some((r) => (r.counts[limitedAt] ?? 0) > 0)) {
        split.push(...(await limitedReads.sums(this.db, { ...range, by: 'token' })))
      }
    }
    const total = (c: readonly number[]) => c.reduce((a, b) => a + b, 0)
    return [...sums]
      .map(([token, c]) => ({ token, sum: total(c), outcomes: outcomesOf(c) }))
      .sort((a, b) => b.sum - a.sum || (a.token < b.token ? -1 : a.token > b.token ? 1 : 0))
      .map(({ token, outcomes }) =>
        withSplit({ token, outcomes }, byName(split.filter((s) => s.tokenId === token))),
      )
  }

  /** Hours while their retention covers `from`, else days. */
  private coarseEnough(from: number): Resolution {
    return from >= this.now() - this.retentionDays.hour * dayMs ? 'hour' : 'day'
  }

  /** Last use and valid validations per hour of the last 30 days, as stored (none before the
   * hour the account was created: see `UsageRange.since`). */
  activity(id: string, account?: string): Promise<TokenActivity> {
    const since = new Date(this.now() - usageDays * dayMs).toISOString().slice(0, 13)
    return usageRepo.activity(this.db, id, since, account)
  }

  lastUsed(ids: string[]): Promise<Map<string, string>> {
    return usageRepo.lastUsed(this.db, ids)
  }
}
