import { type OutcomeCounts, outcomes } from '../../usage/outcomes.js'

/**
 * The periods of the Usage page and a token's page: the last 24 hours by hour and the last 30
 * days by day (UTC), each ending with the bucket now is in. Pure functions of the service clock.
 */
export const periodNames = ['24h', '30d'] as const
export type PeriodName = (typeof periodNames)[number]
export const defaultPeriod: PeriodName = '24h'
export const isPeriodName = (value: unknown): value is PeriodName =>
  periodNames.includes(value as PeriodName)

export interface Period {
  name: PeriodName
  resolution: 'hour' | 'day'
  /** In words: `last 24 hours`, `last 30 days`. */
  label: string
  /** [from, to) as ISO 8601: the first bucket's start and the end of the current bucket. */
  from: string
  to: string
  /** Every bucket's start (epoch ms), oldest first. */
  starts: number[]
}

const hourMs = 3_600_000
const dayMs = 24 * hourMs
const shapes = {
  '24h': { resolution: 'hour', size: hourMs, count: 24, label: 'last 24 hours' },
  '30d': { resolution: 'day', size: dayMs, count: 30, label: 'last 30 days' },
} as const

export function periodOf(name: PeriodName, now: number): Period {
  const { resolution, size, count, label } = shapes[name]
  const end = Math.floor(now / size) * size + size
  const starts = Array.from({ length: count }, (_, i) => end - (count - i) * size)
  const from = new Date(starts[0] as number).toISOString()
  return { name, resolution, label, from, to: new Date(end).toISOString(), starts }
}

/** One bucket of a series: its start (epoch ms) and its counts in the order of `outcomes`. */
export interface Bucket {
  start: number
  counts: number[]
}

/** The counts of an outcome map as an array in the order of `outcomes` (zeros written). */
export const countsOf = (found: OutcomeCounts | undefined) => outcomes.map((o) => found?.[o] ?? 0)

/** Every bucket of the period, the series' counts where it has some, zeros elsewhere. */
export function fill(
  period: Period,
  series: readonly { start: string; outcomes: OutcomeCounts }[],
): Bucket[] {
  const byStart = new Map(series.map((b) => [Date.parse(b.start), b.outcomes]))
  return period.starts.map((start) => ({ start, counts: countsOf(byStart.get(start)) }))
}

export const sum = (numbers: readonly number[]) => numbers.reduce((a, b) => a + b, 0)

/** Per outcome, the counts of every bucket added up. */
export const totalsOf = (buckets: readonly Bucket[]) =>
  outcomes.map((_, i) => sum(buckets.map((b) => b.counts[i] ?? 0)))

/**
 * The CSV download: a header, then one row per bucket of the period, oldest first. RFC 4180:
 * every record ends with CRLF; no field needs quotes (names, ISO 8601 instants, integers).
 */
export function usageCsv(buckets: readonly Bucket[]): string {
  const rows = buckets.map((b) => [new Date(b.start).toISOString(), ...b.counts].join(','))
  return [['start', ...outcomes].join(','), ...rows].map((r) => `${r}\r\n`).join('')
}

/**
 * The file name of a download: `usage-<username>-<from>.csv`, `from` as the first bucket's day
 * (`2026-10-24`) or hour (`2026-11-21T1300Z`): ISO 8601 without the colons file systems refuse.
 */
export function csvName(username: string, period: Period): string {
  const from = period.from
  const at = period.resolution === 'day' ? from.slice(0, 10) : `${from.slice(0, 13)}00Z`
  return `usage-${username}-${at}.csv`
}
