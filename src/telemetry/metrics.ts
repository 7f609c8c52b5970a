import { newCounters } from './batch.js'
import { keyValues } from './schema.js'

type Labels = Readonly<Record<string, string | number | undefined>>

/** A metric as prom-client's `registry.getMetricsAsJSON()` gives it. */
export interface PromMetric {
  name: string
  help: string
  /** `counter`, `gauge`, `histogram` or `summary` (typed as an enum by prom-client). */
  type: unknown
  values: readonly { value: number; labels: Labels; metricName?: string }[]
}

/** What the exporter reads: a prom-client Registry. */
export interface MetricRegistry {
  getMetricsAsJSON(): Promise<readonly PromMetric[]>
}

const cumulative = 2

const attributesOf = (labels: Labels) =>
  keyValues(
    Object.entries(labels).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)] as const])),
  )

interface Series {
  labels: Labels
  /** [le, cumulative count] of the finite buckets. */
  buckets: [number, number][]
  infinite?: number
  sum?: number
  count?: number
}

/**
 * prom-client's series of one histogram (`_bucket` by `le`, cumulative; `_sum`; `_count`) as
 * OTLP points: explicit bounds without +Inf, and a count per bucket (the last one above every
 * bound), the way OTLP counts them.
 */
function histogramPoints(metric: PromMetric, startNs: bigint, timeNs: bigint) {
  const series = new Map<string, Series>()
  for (const { value, labels, metricName = '' } of metric.values) {
    const { le, ...rest } = labels
    const key = JSON.stringify(Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1)))
    let s = series.get(key)
    if (s === undefined) {
      s = { labels: rest, buckets: [] }
      series.set(key, s)
    }
    if (metricName.endsWith('_sum')) s.sum = value
    else if (metricName.endsWith('_count')) s.count = value
    else if (le === '+Inf' || le === Number.POSITIVE_INFINITY) s.infinite = value
    else if (le !== undefined) s.buckets.push([Number(le), value])
  }
  return [...series.values()].map((s) => {
    s.buckets.sort(([a], [b]) => a - b)
    const count = s.count ?? s.infinite ?? 0
    let below = 0
    const bucketCounts = s.buckets.map(([, atOrBelow]) => {
      const n = Math.max(0, atOrBelow - below)
      below = Math.max(below, atOrBelow)
      return n
    })
    bucketCounts.push(Math.max(0, count - below))
    return {
      attributes: attributesOf(s.labels),
      startTimeUnixNano: startNs,
      timeUnixNano: timeNs,
      count,
      sum: s.sum,
      bucketCounts,
      explicitBounds: s.buckets.map(([le]) => le),
    }
  })
}

/**
 * A registry's metrics as OTLP Metrics: counters as monotonic cumulative Sums, gauges as Gauges,
 * histograms as cumulative Histograms, labels as attributes; cumulative since `startNs` (when
 * the exporter started). Summaries (none of Tessera's own) and metrics without a series yet
 * are left out.
 */
export function otlpMetrics(metrics: readonly PromMetric[], startNs: bigint, timeNs: bigint) {
  const out: object[] = []
  let points = 0
  for (const metric of metrics) {
    const { name, help: description, values } = metric
    if (values.length === 0) continue
    const numberPoints = (start: bigint | undefined) =>
      values.map(({ value, labels }) => ({
        attributes: attributesOf(labels),
        startTimeUnixNano: start,
        timeUnixNano: timeNs,
        asDouble: value,
      }))
    const type = String(metric.type)
    if (type === 'counter') {
      const dataPoints = numberPoints(startNs)
      points += dataPoints.length
      const sum = { dataPoints, aggregationTemporality: cumulative, isMonotonic: true }
      out.push({ name, description, sum })
    } else if (type === 'gauge') {
      const dataPoints = numberPoints(undefined)
      points += dataPoints.length
      out.push({ name, description, gauge: { dataPoints } })
    } else if (type === 'histogram') {
      const dataPoints = histogramPoints(metric, startNs, timeNs)
      points += dataPoints.length
      out.push({ name, description, histogram: { dataPoints, aggregationTemporality: cumulative } })
    }
  }
  return { metrics: out, points }
}

/**
 * Every interval, the registry's metrics to the OTLP endpoint (OTEL_METRIC_EXPORT_INTERVAL). An
 * export still in flight when the next is due skips that one: nothing is lost, the values are
 * cumulative and the next export has them.
 */
export class MetricsExporter {
  readonly counters = newCounters()
  private timer: NodeJS.Timeout | undefined
  private inFlight: Promise<void> | undefined
  private readonly startNs: bigint

  constructor(
    private readonly registry: MetricRegistry,
    private readonly exporter: { export(items: readonly object[]): Promise<void> },
    private readonly intervalMs: number,
    /** Epoch ns now. */
    private readonly nowNs: () => bigint,
    private readonly onFailure: (err: unknown) => void = () => {},
  ) {
    this.startNs = nowNs()
  }

  start(): void {
    if (this.timer !== undefined) return
    this.timer = setInterval(() => void this.collect(), this.intervalMs)
    this.timer.unref()
  }

  /** Reads the registry and exports it; never rejects. */
  collect(): Promise<void> {
    if (this.inFlight !== undefined) return this.inFlight
    this.inFlight = this.exportOnce().finally(() => {
      this.inFlight = undefined
    })
    return this.inFlight
  }

  private async exportOnce() {
    let points = 0
    try {
      const read = otlpMetrics(await this.registry.getMetricsAsJSON(), this.startNs, this.nowNs())
      points = read.points
      if (read.metrics.length > 0) await this.exporter.export(read.metrics)
      this.counters.exported += points
    } catch (err) {
      this.counters.failedExports++
      this.counters.failedItems += points
      this.onFailure(err)
    }
  }

  /** Stops the interval and sends the last values (once the export in flight is done). */
  async shutdown(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    await this.inFlight
    await this.collect()
  }
}
