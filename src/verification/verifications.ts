import type { Logger } from 'pino'
import type { UsageConfig } from '../config/usage.js'
import type { Db } from '../db/database.js'
import { logWriterThread } from '../db/log-writer-thread.js'
import {
  type StoredVerification,
  type VerificationFilter,
  verificationsRepo,
} from '../db/verifications.js'
import { randomAlnum } from '../ids.js'
import { type LogBatch, textOf, VerificationLog } from './log-writer.js'

const dayMs = 86_400_000
/** Rows per write: one INSERT of 1,000 rows on PostgreSQL, one transaction on SQLite. */
const batchRows = 1000

export type { StoredVerification, VerificationFilter }

/** Latency of one bucket: its rows, and p50 and p99 of their durations (microseconds). */
export interface LatencyBucket {
  at: number
  count: number
  p50: number
  p99: number
}

export interface Verifications {
  /** The buffer every source adds its rows to (nothing is kept when the mode is off). */
  log: VerificationLog
  /** An account's rows, newest first (the admin API, the CLI, the dashboard). */
  list(filter: VerificationFilter): Promise<StoredVerification[]>
  /** p50 and p99 of the time to a decision per bucket of `bucketMs`, in [from, to). */
  latency(q: {
    account: string
    from: number
    to: number
    bucketMs: number
    token?: string
  }): Promise<LatencyBucket[]>
  /** Rows of every account dropped unwritten in the minutes of [from, to). */
  drops(from: number, to: number): Promise<number>
  /** Removes what is older than VERIFICATION_LOG_RETENTION_DAYS (the retention job). */
  prune(): Promise<number>
  start(): void
  stop(): Promise<void>
}

/**
 * The verification log of a context (docs/verifications.md): its buffer, writing rows with an
 * id of this process (`<8 random characters>` + a counter: unique across instances, the
 * cursor's tie-break), and telling the database how many rows were dropped, per minute, so that
 * a list of them can say it may lack some.
 */
export function verificationsOf(
  db: Db,
  config: UsageConfig['log'],
  /** `file`: the SQLite database's, whose rows a thread of their own writes. */
  o: { now: () => number; log: Logger; file?: string },
): Verifications {
  const instance = randomAlnum(8)
  let reported = 0
  let failures = 0
  // On SQLite a thread of its own writes, when it can run (db/log-writer-thread.ts); started
  // with the first rows (a CLI command never has any).
  let thread: ReturnType<typeof logWriterThread> | null = null
  const write = async (batch: LogBatch) => {
    if (thread === null) thread = o.file === undefined ? undefined : logWriterThread(o.file)
    if (thread !== undefined) await thread.write(batch.bytes)
    else await verificationsRepo.insertJson(db, textOf(batch), batch.days)
    failures = 0
  }
  const log = new VerificationLog({
    mode: config.mode,
    capacity: config.capacity,
    batch: batchRows,
    instance,
    write,
    onError(err) {
      // Once per run of failures: the database away for an hour is one line, not 3,600.
      if (failures++ === 0) {
        o.log.warn({ err: (err as Error).message }, 'verification log: rows not written yet')
      }
    },
  })
  let timer: NodeJS.Timeout | undefined
  /** Rows dropped since the last report, added to this minute's count in the database. */
  const reportDrops = async () => {
    const dropped = log.dropped - reported
    if (dropped === 0) return
    const now = o.now()
    await verificationsRepo.addDrops(db, now - (now % 60_000), instance, dropped)
    reported += dropped
    o.log.warn({ dropped }, 'verification log: rows dropped, the buffer was full')
  }
  return {
    log,
    list: (filter) => verificationsRepo.list(db, filter),
    latency: (q) => verificationsRepo.latency(db, q),
    drops: (from, to) => verificationsRepo.drops(db, from, to),
    async prune() {
      if (config.mode === 'off') return 0
      const cutoff = o.now() - config.retentionDays * dayMs
      const removed = await verificationsRepo.prune(db, cutoff)
      await verificationsRepo.prepare(db, o.now())
      return removed
    },
    start() {
      if (config.mode === 'off') return
      log.start(1000)
      const tick = () => {
        timer = setTimeout(() => {
          void reportDrops()
            .catch(() => {})
            .finally(tick)
        }, 10_000)
        timer.unref()
      }
      tick()
    },
    async stop() {
      if (timer !== undefined) clearTimeout(timer)
      await log.stop()
      await reportDrops().catch(() => {})
    },
  }
}
