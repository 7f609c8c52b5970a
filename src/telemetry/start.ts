import { BatchQueue, type ExportCounters, newCounters } from './batch.js'
import { msToNs, nanoClock } from './clock.js'
import type { Destination, Signal, TelemetryConfig } from './config.js'
import { SignalExporter } from './exporter.js'
import { logRecordOf, type VerificationRow } from './logs.js'
import { type MetricRegistry, MetricsExporter } from './metrics.js'
import { originOf } from './resource.js'
import { otlpSpan, type Span, Tracer } from './tracer.js'

/** What the telemetry is given by the context that starts it. */
export interface TelemetryDeps {
  /** The service's clock, epoch ms. */
  now: () => number
  /** The metrics to export (the context's prom-client registry). */
  registry?: MetricRegistry | undefined
  /** Where failed exports are told (pino's warn): once a minute per signal at most. */
  log?: { warn(details: object, message: string): void } | undefined
}

export interface Telemetry {
  /** Server spans; none when traces are not exported. */
  tracer: Tracer | undefined
  /** Starts the periodic metrics export (nothing when metrics are not exported). */
  startMetrics(): void
  /** Queues verification-log rows as OTLP log records (nothing when logs are not exported). */
  exportLogs(rows: readonly VerificationRow[]): void
  /** Per signal, since start: for /metrics. */
  counters: Record<'spans' | 'metrics' | 'logs', ExportCounters>
  /** Sends what is queued, for at most `deadlineMs`, and closes the connections. */
  shutdown(deadlineMs?: number): Promise<void>
}

/** A failed export's warning, at most once a minute per signal: a receiver down is one line. */
function warner(deps: TelemetryDeps, signal: Signal) {
  let last = Number.NEGATIVE_INFINITY
  return (err: unknown) => {
    const at = deps.now()
    if (at - last < 60_000) return
    last = at
    const reason = (err as Error)?.message ?? String(err)
    deps.log?.warn({ signal, reason }, 'OpenTelemetry export failed')
  }
}

/** The exporters `config` asks for, started (loaded by index.ts only when telemetry is on). */
export function startTelemetry(config: TelemetryConfig, deps: TelemetryDeps): Telemetry {
  const origin = originOf(config)
  const nowNs = () => msToNs(deps.now())
  const closers: (() => void)[] = []
  const exporter = (signal: Signal, to: Destination, timeoutMs?: number) => {
    const e = new SignalExporter(signal, to, origin, timeoutMs)
    closers.push(() => e.close())
    return e
  }

  let spans: BatchQueue<Span> | undefined
  let tracer: Tracer | undefined
  if (config.traces !== undefined) {
    const { batching } = config.traces
    const e = exporter('traces', config.traces, batching.exportTimeoutMs)
    const send = (batch: Span[]) => e.export(batch.map(otlpSpan))
    spans = new BatchQueue(batching, send, warner(deps, 'traces'))
    tracer = new Tracer(config.traces.sampling, spans, nanoClock(deps.now))
  }

  let logs: BatchQueue<VerificationRow> | undefined
  if (config.logs !== undefined) {
    const { batching } = config.logs
    const e = exporter('logs', config.logs, batching.exportTimeoutMs)
    const send = (rows: VerificationRow[]) => {
      const observed = nowNs()
      return e.export(rows.map((row) => logRecordOf(row, observed)))
    }
    logs = new BatchQueue(batching, send, warner(deps, 'logs'))
  }

  let metrics: MetricsExporter | undefined
  if (config.metrics !== undefined && deps.registry !== undefined) {
    const e = exporter('metrics', config.metrics)
    const failed = warner(deps, 'metrics')
    metrics = new MetricsExporter(deps.registry, e, config.metrics.intervalMs, nowNs, failed)
  }

  return {
    tracer,
    startMetrics: () => metrics?.start(),
    exportLogs(rows) {
      if (logs !== undefined) for (const row of rows) logs.add(row)
    },
    counters: {
      spans: spans?.counters ?? newCounters(),
      metrics: metrics?.counters ?? newCounters(),
      logs: logs?.counters ?? newCounters(),
    },
    async shutdown(deadlineMs = 3000) {
      let deadline: NodeJS.Timeout | undefined
      const late = new Promise<void>((resolve) => {
        deadline = setTimeout(resolve, deadlineMs)
        deadline.unref()
      })
      await Promise.all([
        spans?.shutdown(deadlineMs),
        logs?.shutdown(deadlineMs),
        metrics === undefined ? undefined : Promise.race([metrics.shutdown(), late]),
      ])
      clearTimeout(deadline)
      for (const close of closers) close()
    },
  }
}
