import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Buckets, PlainHistogram } from '../../src/metrics/histogram.js'
import { telemetryOf } from '../../src/telemetry/index.js'
import { otlpMetrics } from '../../src/telemetry/metrics.js'
import { nowMs } from './helpers.js'
import { attributesOf, type Otlp, otlpReceiver, type Receiver } from './receiver.js'

let receiver: Receiver
beforeEach(async () => {
  receiver = await otlpReceiver()
})
afterEach(() => receiver.close())

/** A registry with one metric of each kind, filled with known values. */
function filledRegistry() {
  const registry = new Registry()
  const registers = [registry]
  const requests = new Counter({
    name: 'tessera_test_requests_total',
    help: 'Requests by route',
    labelNames: ['route'],
    registers,
  })
  requests.inc({ route: '/a' }, 3)
  requests.inc({ route: '/b' })
  new Counter({
    name: 'tessera_test_unused_total',
    help: 'Never counted',
    labelNames: ['x'],
    registers,
  })
  new Gauge({ name: 'tessera_test_entries', help: 'Entries', registers }).set(42.5)
  const latency = new Histogram({
    name: 'tessera_test_seconds',
    help: 'Latency',
    labelNames: ['route'],
    buckets: [0.1, 0.5, 1],
    registers,
  })
  for (const v of observed) latency.observe({ route: '/a' }, v)
  latency.observe({ route: '/b' }, 0.2)
  // Tessera's own histograms (src/metrics/histogram.ts): bounds as strings, counts kept apart.
  const sizes = new Buckets([1, 10])
  for (const v of [1, 1, 5, 50]) sizes.observe(v)
  new PlainHistogram({ name: 'tessera_test_sizes', help: 'Sizes', registry }, () => [[{}, sizes]])
  return registry
}

const observed = [0.05, 0.1, 0.3, 0.7, 2, 5]
const route = (r: string) => [{ key: 'route', value: { stringValue: r } }]

describe('the metrics Tessera sends', () => {
  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    it(`sends counters, gauges and histograms with exact values, over ${protocol}`, async () => {
      let now = nowMs
      const telemetry = await telemetryOf(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_TRACES_EXPORTER: 'none',
          OTEL_LOGS_EXPORTER: 'none',
          OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
          OTEL_METRIC_EXPORT_INTERVAL: '30',
        },
        { now: () => now, registry: filledRegistry() },
      )
      now += 5000
      telemetry?.startMetrics()
      const [request] = await receiver.waitFor('/v1/metrics')
      await telemetry?.shutdown()
      const [resourceMetrics] = request?.decoded.resourceMetrics ?? []
      expect(attributesOf(resourceMetrics.resource.attributes)['service.name']).toBe('tessera')
      expect(resourceMetrics.scopeMetrics[0].scope.name).toBe('tessera')
      const start = '1700000000000000000'
      const time = '1700000005000000000'
      const metrics: Otlp[] = resourceMetrics.scopeMetrics[0].metrics
      expect(metrics.map((m) => m.name)).toEqual([
        'tessera_test_requests_total',
        'tessera_test_entries',
        'tessera_test_seconds',
        'tessera_test_sizes',
      ])
      const [counter, gauge, histogram, plain] = metrics
      expect(counter).toEqual({
        name: 'tessera_test_requests_total',
        description: 'Requests by route',
        sum: {
          dataPoints: [
            { attributes: route('/a'), startTimeUnixNano: start, timeUnixNano: time, asDouble: 3 },
            { attributes: route('/b'), startTimeUnixNano: start, timeUnixNano: time, asDouble: 1 },
          ],
          aggregationTemporality: 2,
          isMonotonic: true,
        },
      })
      expect(gauge).toEqual({
        name: 'tessera_test_entries',
        description: 'Entries',
        gauge: { dataPoints: [{ timeUnixNano: time, asDouble: 42.5 }] },
      })
      const point = (attributes: Otlp, count: string, sum: number, bucketCounts: string[]) => ({
        attributes,
        startTimeUnixNano: start,
        timeUnixNano: time,
        count,
        sum,
        bucketCounts,
        explicitBounds: [0.1, 0.5, 1],
      })
      expect(histogram).toEqual({
        name: 'tessera_test_seconds',
        description: 'Latency',
        histogram: {
          dataPoints: [
            // In the order prom-client adds them: the same double.
            point(
              route('/a'),
              '6',
              observed.reduce((a, b) => a + b),
              ['2', '1', '1', '2'],
            ),
            point(route('/b'), '1', 0.2, ['0', '1', '0', '0']),
          ],
          aggregationTemporality: 2,
        },
      })
      expect(plain.histogram.dataPoints).toEqual([
        {
          startTimeUnixNano: start,
          timeUnixNano: time,
          count: '4',
          sum: 57,
          bucketCounts: ['2', '1', '1'],
          explicitBounds: [1, 10],
        },
      ])
      expect(telemetry?.counters.metrics.exported).toBeGreaterThanOrEqual(7)
      expect(telemetry?.counters.metrics.failedExports).toBe(0)
    })
  }

  it('sends the last values on shutdown, and counts a failed export', async () => {
    const registry = new Registry()
    const c = new Counter({ name: 'tessera_test_total', help: 'n', registers: [registry] })
    const env = {
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${receiver.url}/v1/metrics`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    }
    const telemetry = await telemetryOf(env, { now: () => nowMs, registry })
    expect(telemetry?.tracer).toBeUndefined()
    c.inc(7)
    await telemetry?.shutdown()
    const [request] = receiver.received
    expect(receiver.received).toHaveLength(1)
    const metric = request?.decoded.resourceMetrics[0].scopeMetrics[0].metrics[0]
    expect(metric.sum.dataPoints[0].asDouble).toBe(7)
    expect(telemetry?.counters.metrics).toEqual({
      exported: 1,
      dropped: 0,
      failedExports: 0,
      failedItems: 0,
    })

    receiver.status = 500
    const failing = await telemetryOf(env, { now: () => nowMs, registry })
    await failing?.shutdown()
    expect(failing?.counters.metrics).toEqual({
      exported: 0,
      dropped: 0,
      failedExports: 1,
      failedItems: 1,
    })
  })

  it("converts every metric of Node's process metrics (what METRICS_PORT serves beside Tessera's)", async () => {
    const registry = new Registry()
    collectDefaultMetrics({ register: registry })
    const read = await registry.getMetricsAsJSON()
    const { metrics, points } = otlpMetrics(read, 1n, 2n)
    const named = read.filter((m) => m.values.length > 0).map((m) => m.name)
    expect(metrics.map((m: Otlp) => m.name)).toEqual(named)
    for (const m of metrics as Otlp[]) {
      expect(Object.keys(m).filter((k) => ['sum', 'gauge', 'histogram'].includes(k))).toHaveLength(
        1,
      )
    }
    const gc = (metrics as Otlp[]).find((m) => m.name === 'nodejs_gc_duration_seconds')
    for (const p of gc?.histogram.dataPoints ?? []) {
      expect(p.bucketCounts).toHaveLength(p.explicitBounds.length + 1)
      expect(p.bucketCounts.reduce((a: number, b: number) => a + b, 0)).toBe(p.count)
    }
    expect(points).toBeGreaterThan(named.length - 1)
  })
})
