import type { VerifyOptions } from './answers.js'
import { Credits } from './credits.js'
import { defaults, type VerifierOptions } from './options.js'
import { rateLimited } from './outcomes.js'
import { RateLimits } from './ratelimits.js'
import { RefusedLog } from './refused-log.js'
import { Reporter, type ReporterStats } from './reporter.js'
import type { Transport } from './transport.js'
import { type MeterKey, UsageCounter } from './usage.js'

/**
 * What a verifier counts and spends: the counts of its decisions (and a row of each refused
 * one, for Tessera's verification log), reported every reportEveryMs, the credits it holds in
 * leases, handed back (with a report) within a second of their end, and the blocks of rate
 * limits it holds (lost, not handed back, when their window ends).
 */
export class Metering {
  readonly counter: UsageCounter
  readonly refused: RefusedLog
  readonly reporter: Reporter
  readonly credits: Credits
  /** The blocks of rate limits held here. */
  readonly limits: RateLimits
  /** Malformed and invalid strings name nobody: counted for ('', ''). */
  readonly nobody: MeterKey
  private readonly timer: NodeJS.Timeout
  private readonly reportEveryMs: number
  private nextReportAt: number

  constructor(
    transport: Transport,
    options: VerifierOptions,
    onError: (err: Error) => void,
    emptyForMs: number,
  ) {
    const reportEveryMs = options.reportEveryMs ?? defaults.reportEveryMs
    const maxPendingRows = options.maxPendingRows ?? defaults.maxPendingRows
    const maxKeys = 2 * (options.maxEntries ?? defaults.maxEntries) + 1024
    this.counter = new UsageCounter(reportEveryMs > 0, maxKeys, () => this.reporter.room())
    this.nobody = this.counter.key('', '')
    const maxRefusedRows = options.maxRefusedRows ?? defaults.maxRefusedRows
    if (!Number.isSafeInteger(maxRefusedRows) || maxRefusedRows < 0) {
      throw new TypeError('maxRefusedRows must be a whole number, 0 or more')
    }
    this.refused = new RefusedLog(reportEveryMs > 0 && maxRefusedRows > 0, maxRefusedRows)
    this.reporter = new Reporter(
      transport,
      this.counter,
      this.refused,
      maxPendingRows,
      onError,
      options.reporter,
    )
    const maxLease = options.maxLeaseCredits ?? defaults.maxLeaseCredits
    this.credits = new Credits(transport, (lease) => this.reporter.giveBack(lease), onError, {
      firstLease: Math.min(defaults.firstLeaseCredits, maxLease),
      maxLease,
      emptyForMs,
    })
    this.limits = new RateLimits(transport, onError, {
      firstLease: defaults.firstLeaseLimits,
      maxLease: defaults.maxLeaseLimits,
    })
    this.reportEveryMs = reportEveryMs
    this.nextReportAt = Date.now() + reportEveryMs
    this.timer = setInterval(() => this.tick(), Math.min(reportEveryMs || 1000, 1000))
    this.timer.unref()
  }

  /**
   * Counts a refused decision (outcome: its index in `outcomes`; rate_limited by `limit`) and
   * keeps its row for the verification log (`started`: performance.now() when the verification
   * began; undefined: not timed, decided at once from the cache).
   */
  refuse(
    key: MeterKey,
    outcome: number,
    now: number,
    options: VerifyOptions | undefined,
    started: number | undefined,
    limit?: string,
  ): void {
    if (outcome === rateLimited) this.counter.countLimited(key, limit ?? '', now)
    else this.counter.count(key, outcome, now)
    this.refused.add(key, outcome, now, options, started, limit)
  }

  stats(): ReporterStats & { creditsHeld: number } {
    return { ...this.reporter.stats(), creditsHeld: this.credits.held() }
  }

  /** Sends the counts not yet reported and hands back every lease, waiting at most `waitMs`. */
  async close(waitMs: number): Promise<void> {
    clearInterval(this.timer)
    // No lease is granted after the final return: none is asked from now on.
    this.credits.close()
    this.limits.close()
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs)
    })
    const last = async () => {
      // A lease on its way is handed back too.
      await this.credits.idle()
      this.credits.sweep(undefined, true)
      await this.reporter.report()
    }
    await Promise.race([last(), bound])
    clearTimeout(timer)
  }

  /** Hands back ended leases; reports when due, or at once when there are leases to hand back. */
  private tick(): void {
    const now = Date.now()
    this.credits.sweep()
    this.limits.sweep()
    const due = this.reportEveryMs > 0 && now >= this.nextReportAt
    if (!due && !this.reporter.returning) return
    if (due) this.nextReportAt = now + this.reportEveryMs
    void this.reporter.report()
  }
}
