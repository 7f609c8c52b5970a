import { Histogram, type Registry } from 'prom-client'

/**
 * Observations counted into fixed buckets with plain arithmetic: what a hot path can afford
 * (prom-client's own `observe()` validates and hashes its labels on every call).
 */
export class Buckets {
  /** Per bucket, not cumulative; a value above the last bound is only in `count`. */
  readonly counts: number[]
  sum = 0
  count = 0

  constructor(readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0)
  }

  observe(value: number): void {
    this.sum += value
    this.count++
    const { bounds } = this
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1
        return
      }
    }
  }
}

type Labels = Record<string, string>

/**
 * A prom-client histogram whose series are `Buckets` kept elsewhere, read when scraped. Only
 * what the registry reads is replaced: `getForPromString()`, which prom-client's Registry asks
 * for in preference to `get()` (and which `get()` builds on).
 */
export class PlainHistogram extends Histogram<string> {
  private readonly series: () => Iterable<[Labels, Buckets]>
  private readonly spec: { name: string; help: string }

  constructor(
    spec: { name: string; help: string; labelNames?: string[]; registry: Registry },
    series: () => Iterable<[Labels, Buckets]>,
  ) {
    const { name, help, labelNames = [], registry } = spec
    super({ name, help, labelNames, registers: [registry] })
    this.series = series
    this.spec = spec
  }

  async getForPromString() {
    const { name, help } = this.spec
    const values: { labels: Labels; sharedLabels: Labels; value: number; metricName: string }[] = []
    const add = (metricName: string, labels: Labels, value: number) =>
      values.push({ metricName, labels, sharedLabels: {}, value })
    for (const [labels, buckets] of this.series()) {
      let cumulative = 0
      buckets.bounds.forEach((bound, i) => {
        cumulative += buckets.counts[i] as number
        add(`${name}_bucket`, { ...labels, le: String(bound) }, cumulative)
      })
      add(`${name}_bucket`, { ...labels, le: '+Inf' }, buckets.count)
      add(`${name}_sum`, labels, buckets.sum)
      add(`${name}_count`, labels, buckets.count)
    }
    return { name, help, type: 'histogram', values, aggregator: 'sum' }
  }
}
