import type { Logger } from 'pino'
import type { UsageConfig } from '../config/usage.js'
import type { Db } from '../db/database.js'
import type { UsageLosses } from '../metrics/metrics.js'
import type { IpcChannel } from '../ratelimit/ipc.js'
import { isoTime } from '../time.js'
import { handOverTo, handoverMs } from './handover.js'
import { Meter } from './meter.js'

/** Where a meter's failed writes and dropped windows are counted (`Metrics` has them). */
export interface UsageFigures {
  databaseErrors: { usage: number }
  usageLosses: UsageLosses
}

/**
 * The meter of a process: it writes every USAGE_FLUSH_SECONDS, or (a worker, given its channel
 * to the primary) hands its counts over every second; failed writes and dropped windows are
 * logged and counted in `figures`.
 */
export function meterOf(
  db: Db,
  now: () => number,
  config: UsageConfig,
  wiring: { log: Logger; figures: UsageFigures; primary?: IpcChannel },
): Meter {
  const { log, figures, primary } = wiring
  const meter = new Meter(db, now, config.retentionDays, (err) => {
    figures.databaseErrors.usage++
    log.warn({ err: (err as Error).message }, 'usage counts not written: kept for the next flush')
  })
  meter.onDrop = (minute, keys, verifications) => {
    figures.usageLosses.dropped.minutes++
    figures.usageLosses.dropped.keys += keys
    figures.usageLosses.lost.dropped += verifications
    log.warn({ minute: isoTime(minute), keys }, 'usage counts dropped: too many minutes unwritten')
  }
  meter.flushEveryMs = primary === undefined ? config.flushMs : handoverMs
  if (primary !== undefined) meter.handover = handOverTo(primary)
  return meter
}
