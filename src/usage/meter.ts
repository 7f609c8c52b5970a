import type { Db } from '../db/database.js'
import { type TokenActivity, usageRepo } from '../db/usage.js'

const minuteMs = 60_000
const hourMs = 60 * minuteMs
export const usageDays = 30

const hourOf = (ms: number) => new Date(ms).toISOString().slice(0, 13)

/**
 * When each token was last validated and how often per hour, counted in memory on the hot path
 * (a clock read and one Map update per validation) in windows of one calendar minute, and
 * written once a minute: one upsert per token and hour, so at most one write per token per
 * minute per instance. On PostgreSQL the upserts add up the counts of every instance.
 */
export class Meter {
  private counts = new Map<string, number>()
  private windowStart = 0
  private windowEnd = 0
  /** Closed windows not written yet. */
  private pending: { minute: number; counts: Map<string, number> }[] = []
  private timer: NodeJS.Timeout | undefined
  private flushing: Promise<void> = Promise.resolve()

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** One successful validation of a permanent token. */
  hit(id: string): void {
    if (this.now() >= this.windowEnd) this.rotate()
    const n = this.counts.get(id)
    this.counts.set(id, n === undefined ? 1 : n + 1)
  }

  /** Closes the current window (if it counted anything) and opens the one of this minute. */
  private rotate() {
    if (this.counts.size > 0) {
      this.pending.push({ minute: this.windowStart, counts: this.counts })
      this.counts = new Map()
    }
    this.windowStart = Math.floor(this.now() / minuteMs) * minuteMs
    this.windowEnd = this.windowStart + minuteMs
  }

  /** Flushes after every minute's end until stopped. */
  start(): void {
    const schedule = () => {
      const wait = minuteMs - (Date.now() % minuteMs) + 50
      this.timer = setTimeout(() => {
        void this.flush().finally(schedule)
      }, wait)
      this.timer.unref()
    }
    schedule()
  }

  /** Writes everything counted so far; the counts of a failed write are kept for the next. */
  flush(): Promise<void> {
    const run = async () => {
      this.rotate()
      const windows = this.pending
      this.pending = []
      const byHour = new Map<string, Map<string, { count: number; minute: string }>>()
      for (const w of windows) {
        const hour = hourOf(w.minute)
        const minute = new Date(w.minute).toISOString()
        let merged = byHour.get(hour)
        if (merged === undefined) {
          merged = new Map()
          byHour.set(hour, merged)
        }
        for (const [id, count] of w.counts) {
          const seen = merged.get(id)
          if (seen === undefined) merged.set(id, { count, minute })
          else
            merged.set(id, {
              count: seen.count + count,
              minute: seen.minute > minute ? seen.minute : minute,
            })
        }
      }
      for (const [hour, counts] of byHour) {
        try {
          await usageRepo.add(this.db, { hour, counts })
        } catch (err) {
          for (const [id, { count, minute }] of counts) {
            this.pending.push({ minute: Date.parse(minute), counts: new Map([[id, count]]) })
          }
          this.onError(err)
        }
      }
    }
    this.flushing = this.flushing.then(run, run)
    return this.flushing
  }

  /** Stops the timer and writes what is left (shutdown). */
  async stop(): Promise<void> {
    clearTimeout(this.timer)
    await this.flush()
  }

  /** Last use and hourly counts of the last 30 days, as stored (this instance's unflushed
   * counts are not in them until the next minute). */
  activity(id: string): Promise<TokenActivity> {
    return usageRepo.activity(this.db, id, hourOf(this.now() - usageDays * 24 * hourMs))
  }

  lastUsed(ids: string[]): Promise<Map<string, string>> {
    return usageRepo.lastUsed(this.db, ids)
  }

  prune(): Promise<void> {
    return usageRepo.prune(this.db, hourOf(this.now() - usageDays * 24 * hourMs))
  }
}
