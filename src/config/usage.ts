import { ConfigError } from './error.js'
import { integer } from './values.js'

export interface UsageConfig {
  /** Days each resolution of the verification counts is kept (minutes, hours, days). */
  retentionDays: { minute: number; hour: number; day: number }
  /** How often an instance (or a primary, for its workers) writes its counts: USAGE_FLUSH_SECONDS. */
  flushMs: number
  /** Shares of a credit balance spent (percent, ascending) that send `credits.threshold`. */
  creditThresholds: number[]
  /** The verification log (docs/verifications.md). */
  log: {
    /** VERIFICATION_LOG: every verification, refusals only, or none. */
    mode: 'all' | 'refused' | 'off'
    /** VERIFICATION_LOG_RETENTION_DAYS. */
    retentionDays: number
    /** VERIFICATION_LOG_BUFFER: rows held unwritten at most; past it rows are dropped. */
    capacity: number
  }
}

function logMode(value: string | undefined): UsageConfig['log']['mode'] {
  if (value === undefined || value === '') return 'refused'
  if (value === 'all' || value === 'refused' || value === 'off') return value
  throw new ConfigError(`VERIFICATION_LOG must be all, refused or off, got "${value}"`)
}

function thresholds(value: string | undefined): number[] {
  if (value === undefined) return [80, 100]
  if (value.trim() === '') return []
  const shares = value.split(',').map((part) => part.trim())
  if (!shares.every((s) => /^\d+$/.test(s) && Number(s) >= 1 && Number(s) <= 100)) {
    throw new ConfigError(
      `CREDIT_THRESHOLDS must be percentages from 1 to 100, comma-separated, got "${value}"`,
    )
  }
  return [...new Set(shares.map(Number))].sort((a, b) => a - b)
}

export function usageConfig(env: Record<string, string | undefined>): UsageConfig {
  const minute = integer('USAGE_MINUTE_RETENTION_DAYS', env.USAGE_MINUTE_RETENTION_DAYS, 7, 1, 366)
  const hour = integer('USAGE_HOUR_RETENTION_DAYS', env.USAGE_HOUR_RETENTION_DAYS, 90, 1, 3660)
  const day = integer('USAGE_DAY_RETENTION_DAYS', env.USAGE_DAY_RETENTION_DAYS, 1095, 1, 36_500)
  return {
    retentionDays: { minute, hour, day },
    flushMs: integer('USAGE_FLUSH_SECONDS', env.USAGE_FLUSH_SECONDS, 10, 1, 60) * 1000,
    creditThresholds: thresholds(env.CREDIT_THRESHOLDS),
    log: {
      mode: logMode(env.VERIFICATION_LOG),
      retentionDays: integer(
        'VERIFICATION_LOG_RETENTION_DAYS',
        env.VERIFICATION_LOG_RETENTION_DAYS,
        7,
        1,
        3660,
      ),
      capacity: integer(
        'VERIFICATION_LOG_BUFFER',
        env.VERIFICATION_LOG_BUFFER,
        100_000,
        1,
        10_000_000,
      ),
    },
  }
}
