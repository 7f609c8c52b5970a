import type { Db } from '../db/database.js'
import { type TokenActivity, usageRepo } from '../db/usage.js'
import type { Resolution } from '../db/usage-reads.js'
import type { Validation } from '../tokens/validator.js'
import { keyOf, meterKey, outcomeOfCode, rowsOf } from './attribution.js'
import {
  type Bucket,
  bucketKey,
  countsOf,
  type LimitedBy,
  type SeriesQuery,
  type UsageRange,
  type UsageRow,
} from './buckets.js'
import { outcomeIndex, outcomes } from './outcomes.js'
import { type LimitedByKey, PendingWindows, type Window } from './pending.js'
import { UsageReads, usageDays } from './reads.js'

export type {
  Bucket,
  LimitedBy,
  Resolution,
  SeriesQuery,
  TokenActivity,
  UsageRange,
  UsageRow,
  Window,
}
export { usageDays }

const minuteMs = 60_000
const dayMs = 86_400_000

/**
 * Verifications by outcome per (account, token id, minute), counted in memory on the hot path
 * (a clock read and one Map update) in windows of one calendar minute, and written every
 * `start`'s interval (USAGE_FLUSH_SECONDS; a worker hands them to its primary every second
 * instead): the minute rows, and the same counts added to the hour and day rows, in one
 * transaction a minute (docs/metering.md). Upserts that add: every instance's counts sum up,
 * and a minute written in several flushes too. A refusal by a named limit is also counted by
 * the limit's name (`countLimited`), travels and is written with its minute's counts. The
 * reads are `UsageReads`'.
 */
export class Meter extends UsageReads {
  private counts = new Map<string, number[]>()
  /** The current window's rate_limited by limit name, per key. */
  private limited: LimitedByKey = new Map()
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
    db: Db,
    now: () => number,
    /** Days each resolution is kept (config.usage.retentionDays). */
    retentionDays: { minute: number; hour: number; day: number },
    /** A flush with windows not written (once a flush, the first error). */
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    super(db, now, retentionDays)
  }

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

  /**
   * One verification refused by the limit `name` (the one that refused it): counted once,
   * rate_limited, against whom it names, and in the split of rate_limited by limit name.
   */
  countLimited(validation: Validation, name: string): void {
    const key = keyOf(validation)
    this.add(key, outcomeIndex.rate_limited, 1)
    this.addLimited(key, name, 1)
  }

  /** `n` verifications of `account`'s token `tokenId` refused by the limit `name`. */
  countLimitedAs(account: string, tokenId: string, name: string, n = 1): void {
    const key = meterKey(account, tokenId)
    this.add(key, outcomeIndex.rate_limited, n)
    this.addLimited(key, name, n)
  }

  /** Counts another process counted (a worker's, handed over): written with the next flush. */
  receive(minute: number, counts: Map<string, number[]>, limited?: LimitedByKey): void {
    this.pending.add(minute, counts, limited)
  }

  /** After `add` (which opened the window): the name's count of the key, in this window. */
  private addLimited(key: string, name: string, n: number) {
    let names = this.limited.get(key)
    if (names === undefined) {
      names = new Map()
      this.limited.set(key, names)
    }
    names.set(name, (names.get(name) ?? 0) + n)
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
      const limited = this.limited.size > 0 ? this.limited : undefined
      this.pending.add(this.windowStart, this.counts, limited)
      this.counts = new Map()
      if (limited !== undefined) this.limited = new Map()
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
      ...(r.limited === undefined ? {} : { limited: r.limited }),
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
          await usageRepo.add(this.db, rowsOf(w.minute, w.counts, w.limited))
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
