import type { Logger } from 'pino'
import { Counter, Registry } from 'prom-client'
import type { Config } from '../config.js'
import { createDatabase, type Db } from '../db/database.js'
import { registerUsageLosses } from '../metrics/metrics.js'
import { handoverMs, limitedOf, type UsageHandover } from '../usage/handover.js'
import type { Meter } from '../usage/meter.js'
import { verificationsOf } from '../usage/pending.js'
import { meterOf, type UsageFigures } from '../usage/writes.js'

/** What the primary last heard of a worker's counts (by `Worker.id`, unique to each fork). */
interface Heard {
  at: number
  /** Verifications in that hand-over. */
  verifications: number
}

/**
 * The usage counts of a primary's workers: each hands its counts over every second (an empty
 * hand-over too), and the primary writes them every USAGE_FLUSH_SECONDS, as one instance would.
 * A worker killed (the watchdog, the OOM killer) takes at most its last second of counts with
 * it; how many, the primary can only estimate (docs/metering.md, "What a kill loses").
 */
export class WorkersUsage {
  private readonly heard = new Map<number, Heard>()
  readonly figures: UsageFigures = {
    databaseErrors: { usage: 0 },
    usageLosses: { dropped: { minutes: 0, keys: 0 }, lost: { dropped: 0, workerKilled: 0 } },
  }
  /** The primary's own figures, added to its workers' on METRICS_PORT. */
  readonly registry = new Registry()
  private readonly meter: Meter

  private constructor(
    private readonly db: Db,
    config: Config,
    log: Logger,
    private readonly now: () => number,
  ) {
    const { figures } = this
    this.meter = meterOf(db, now, config.usage, { log, figures })
    registerUsageLosses(this.registry, figures.usageLosses)
    new Counter({
      name: 'tessera_database_errors_total',
      help: 'Database failures by where they were seen',
      labelNames: ['where'],
      registers: [this.registry],
      collect() {
        this.reset()
        this.inc({ where: 'usage' }, figures.databaseErrors.usage)
      },
    })
  }

  /** Opens the database (migrated by the primary's preparation) and starts the flushes. */
  static open(config: Config, log: Logger, now: () => number = Date.now): WorkersUsage {
    const usage = new WorkersUsage(createDatabase(config.db), config, log, now)
    usage.meter.start()
    return usage
  }

  /** A hand-over of the worker of `Worker.id` `worker`. */
  received(worker: number, handover: UsageHandover): void {
    let verifications = 0
    for (const w of handover.windows) {
      const counts = new Map(w.counts)
      verifications += verificationsOf(counts)
      this.meter.receive(w.minute, counts, limitedOf(w.limited))
    }
    this.heard.set(worker, { at: this.now(), verifications })
  }

  /**
   * A worker's channel closed (every message it sent has been read). Unless it ended cleanly
   * (its last counts handed over as it drained), what it counted since its last hand-over is
   * lost: estimated at the rate of that hand-over, for the time since (at most one interval),
   * and returned.
   */
  ended(worker: number, clean: boolean): number {
    const last = this.heard.get(worker)
    this.heard.delete(worker)
    if (clean || last === undefined) return 0
    const share = Math.min(1, (this.now() - last.at) / handoverMs)
    const lost = Math.round(last.verifications * share)
    this.figures.usageLosses.lost.workerKilled += lost
    return lost
  }

  /** Writes what is left and closes the database. */
  async close(): Promise<void> {
    await this.meter.stop().catch(() => {})
    await this.db.destroy()
  }
}
