import type { Registry } from 'prom-client'
import type { ExportCounters } from '../telemetry/index.js'
import { readers } from './metrics.js'

/**
 * `tessera_otel_items_total{signal, result}` (spans, metric points and log records exported,
 * dropped past a queue's bound, or lost with a failed export) and
 * `tessera_otel_export_failures_total{signal}`: what the OpenTelemetry export did, when on.
 */
export function registerTelemetry(
  registry: Registry,
  counters: Record<'spans' | 'metrics' | 'logs', ExportCounters>,
) {
  const { counter } = readers(registry)
  const signals = { traces: counters.spans, metrics: counters.metrics, logs: counters.logs }
  counter(
    'tessera_otel_items_total',
    'OpenTelemetry items by signal and result: exported, dropped (queue full), failed (export)',
    ['signal', 'result'],
    () =>
      Object.entries(signals).flatMap(([signal, c]) => [
        [{ signal, result: 'exported' }, c.exported],
        [{ signal, result: 'dropped' }, c.dropped],
        [{ signal, result: 'failed' }, c.failedItems],
      ]),
  )
  counter(
    'tessera_otel_export_failures_total',
    'OpenTelemetry export requests that failed, by signal',
    ['signal'],
    () => Object.entries(signals).map(([signal, c]) => [{ signal }, c.failedExports]),
  )
}
