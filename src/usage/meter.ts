import type { Db } from '../db/database.js'
import { type TokenActivity, usageRepo } from '../db/usage.js'
import { type Resolution, usageReads } from '../db/usage-reads.js'
import type { Validation } from '../tokens/validator.js'
import { keyOf, meterKey, outcomeOfCode, rowsOf } from './attribution.js'
import {
  addCounts,
  type Bucket,
  bucketKey,
  countsOf,
  outcomesOf,
  partsOf,
  type SeriesQuery,
  startOf,
  type UsageRange,
  type UsageRow,
} from './buckets.js'
import { type OutcomeCounts, outcomes } from './outcomes.js'
import { PendingWindows, type Window } from './pending.js'

export type { Bucket, Resolution, SeriesQuery, TokenActivity, UsageRange, UsageRow, Window }

const minuteMs = 60_000
const dayMs = 86_400_000
/** Days of hourly counts `activity` answers (the token page's chart). */
export const usageDays = 30

/**
 * Verifications by outcome per (account, token id, minute), counted in memory on the hot path
 * (a clock read and one Map update) in windows of one calendar minute, and written every
 * `start`'s interval (USAGE_FLUSH_SECONDS; a worker hands them to its primary every second
 * instead): the minute rows, and the same counts added to the hour and day rows, in one
 * transaction a minute (docs/metering.md). Upserts that add: every instance's counts sum up,
 * and a minute written in several flushes too.
 */
export class Meter {
  private counts = new Map<string, number[]>()
  private windowStart = 0
  private windowEnd = 0
  /** Closed windows (and flushed parts of the current one) not written yet. */
  private readonly pending = new PendingWindows()
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private flushing: Promise<void> = Promise.resolve()
  /**
   * Where a flush hands its windows (the empty list too) instead of writing them: a worker's
   * primary. False when it cannot take them: they are written here.
   */
  handover: ((windows: Window[]) => boolean) | undefined
  /** How often `start` flushes (USAGE_FLUSH_SECONDS; a worker's hand-over: every second). */
  flushEveryMs = minuteMs

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    /** Days each resolution is kept (config.usage.retentionDays). */
    readonly retentionDays: { minute: number; hour: number; day: number },
    /** A flush with windows not written (once a flush, the first error). */
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** The most kept unwritten (a database away for two hours); past it the oldest go. */
  get maxPending() {
    return this.pending.max
  }
  set maxPending(max: { windows: number; keys: number }) {
    this.pending.max = max
  }
  /** Windows (and their keys) dropped unwritten past `maxPending`, since start. */
  get dropped(): { readonly windows: number; readonly keys: number } {
    return this.pending.dropped
  }
  /** A window dropped unwritten past `maxPending` (its minute, epoch ms; keys; verifications). */
  set onDrop(listener: PendingWindows['onDrop']) {
    this.pending.onDrop = listener
  }

  /** `n` verifications of `account`'s token `tokenId` ('' for none) that came to `outcome`. */
  count(account: string, tokenId: string, outcome: number, n = 1): void {
    this.add(meterKey(account, tokenId), outcome, n)
  }

  /** One verification, counted against whom it names (see `keyOf`); its code's outcome unless
   * given (rate_limited, ip_not_allowed, ...). */
  countValidation(validation: Validation, outcome = outcomeOfCode[validation.code]): void {
    this.add(keyOf(validation), outcome, 1)
  }

  /** Counts another process counted (a worker's, handed over): written with the next flush. */
  receive(minute: number, counts: Map<string, number[]>): void {
    this.pending.add(minute, counts)
  }

  private add(key: string, outcome: number, n: number) {
    if (this.now() >= this.windowEnd) this.rotate()
    let counts = this.counts.get(key)
    if (counts === undefined) {
      counts = new Array<number>(outcomes.length).fill(0)
      this.counts.set(key, counts)
    }
    counts[outcome] = (counts[outcome] as number) + n
  }

  /** Moves the current window's counts to `pending` and opens the window of this minute. */
  private rotate() {
    if (this.counts.size > 0) {
      this.pending.add(this.windowStart, this.counts)
      this.counts = new Map()
    }
    this.windowStart = Math.floor(this.now() / minuteMs) * minuteMs
    this.windowEnd = this.windowStart + minuteMs
  }

  /** Writes a verifier's counts now, with its (reporter, batch) in the same transaction: false
   * when that batch was counted already (nothing is written then). `within` runs in it too. */
  record(
    rows: UsageRow[],
    report?: { reporter: string; batch: string },
    within?: (trx: Db) => Promise<void>,
  ): Promise<boolean> {
    const minutes = rows.map((r) => ({
      minute: bucketKey('minute', r.minute),
      account: r.account,
      tokenId: r.tokenId,
      counts: countsOf(r.outcomes),
    }))
    const received = new Date(this.now()).toISOString()
    return usageRepo.record(
      this.db,
      minutes,
      report && { reporter: report.reporter, batch: report.batch, received },
      within,
    )
  }

  /** Flushes every `everyMs` (at its multiples, and so at each minute's end) until stopped. */
  start(everyMs = this.flushEveryMs): void {
    this.stopped = false
    const schedule = () => {
      if (this.stopped) return
      const wait = everyMs - (Date.now() % everyMs) + 50
      this.timer = setTimeout(() => {
        this.timer = undefined
        void this.flush().finally(schedule)
      }, wait)
      this.timer.unref()
    }
    schedule()
  }

  /** A flush is scheduled (started, not stopped). */
  get scheduled(): boolean {
    return this.timer !== undefined
  }

  /**
   * Writes everything counted so far (or hands it over), window by window, each in its own
   * transaction: a window that fails is kept for the next flush (within `maxPending`), the ones
   * after it are written.
   */
  flush(): Promise<void> {
    const run = async () => {
      this.rotate()
      const windows = this.pending.take()
      if (this.handover?.(windows)) return
      const failed: Window[] = []
      let error: unknown
      for (const w of windows) {
        try {
          await usageRepo.add(this.db, rowsOf(w.minute, w.counts))
        } catch (err) {
          failed.push(w)
          error ??= err
        }
      }
      if (failed.length === 0) return
      this.pending.putBack(failed)
      this.onError(error)
    }
    this.flushing = this.flushing.then(run, run)
    return this.flushing
  }

  /** Stops the timer and writes what is left (shutdown); a flush running schedules no other. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    await this.flush()
  }

  /** Buckets of an account (or one of its tokens) with any count, oldest first, a page of them;
   * `next` is the cursor of the page after, when there is one. As stored: this instance's
   * counts of the current minute are not in them until the next flush. */
  async series(account: string, q: SeriesQuery): Promise<{ series: Bucket[]; next?: string }> {
    const limit = q.limit ?? 100
    const { first, rest } = partsOf(q.resolution, q, this.now(), this.retentionDays)
    const after = q.after === undefined ? undefined : bucketKey(q.resolution, Date.parse(q.after))
    const rows: { at: string; counts: number[] }[] = []
    if (first !== undefined && (after === undefined || after < first.at)) {
      const counts = await usageReads.totals(this.db, { account, ...first, token: q.token })
      if (counts.some((n) => n !== 0)) rows.push({ at: first.at, counts })
    }
    const stored = await usageReads.series(this.db, {
      account,
      ...rest,
      token: q.token,
      after,
      limit: limit + 1,
      resolution: q.resolution,
    })
    rows.push(...stored)
    const series = rows
      .slice(0, limit)
      .map((r) => ({ start: startOf(q.resolution, r.at), outcomes: outcomesOf(r.counts) }))
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

  /** Each token's sums (the token '' included), the most counted first. */
  async byToken(
    account: string,
    q: UsageRange & { resolution?: Resolution },
  ): Promise<{ token: string; outcomes: OutcomeCounts }[]> {
    const resolution = q.resolution ?? this.coarseEnough(q.from)
    const sums = new Map<string, number[]>()
    for (const range of this.ranges(account, resolution, q)) {
      for (const r of await usageReads.byToken(this.db, range)) {
        const seen = sums.get(r.tokenId)
        if (seen === undefined) sums.set(r.tokenId, r.counts)
        else addCounts(seen, r.counts)
      }
    }
    const total = (c: readonly number[]) => c.reduce((a, b) => a + b, 0)
    return [...sums]
      .map(([token, c]) => ({ token, sum: total(c), outcomes: outcomesOf(c) }))
      .sort((a, b) => b.sum - a.sum || (a.token < b.token ? -1 : a.token > b.token ? 1 : 0))
      .map(({ token, outcomes }) => ({ token, outcomes }))
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

  /** Each resolution past its retention, reports past 7 days, the last use of tokens gone. */
  prune(): Promise<void> {
    const now = this.now()
    const before = (days: number) => new Date(now - days * dayMs).toISOString()
    return usageRepo.prune(this.db, {
      minute: before(this.retentionDays.minute).slice(0, 16),
      hour: before(this.retentionDays.hour).slice(0, 13),
      day: before(this.retentionDays.day).slice(0, 10),
      reports: before(7),
    })
  }
}
