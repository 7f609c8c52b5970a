import { type Telemetry, type TelemetryDeps, telemetryOf } from '../../src/telemetry/index.js'
import type { Span, SpanStart } from '../../src/telemetry/tracer.js'
import type { Receiver } from './receiver.js'

/** The service's clock in these tests: 2023-11-14T22:13:20.000Z. */
export const nowMs = 1_700_000_000_000
export const startNs = 1_700_000_000_000_000_000n

/** Telemetry sending traces only to `receiver`, soon (10 ms batches), with `env` on top. */
export async function tracesTo(
  receiver: Receiver,
  env: Record<string, string> = {},
  deps: Partial<TelemetryDeps> = {},
): Promise<Telemetry> {
  const telemetry = await telemetryOf(
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_BSP_SCHEDULE_DELAY: '10',
      ...env,
    },
    { now: () => nowMs, ...deps },
  )
  if (telemetry === undefined) throw new Error('telemetry off')
  return telemetry
}

/** A retrieve's span as the fast path would make it. */
export const retrieveStart = (more: Partial<SpanStart> = {}): SpanStart => ({
  startNs,
  attributes: {
    method: 'GET',
    route: '/tokens/v2',
    scheme: 'https',
    clientAddress: '203.0.113.7',
    serverPort: 8443,
  },
  ...more,
})

/** Starts and ends one span: 1.5 ms, answered `status`. */
export function oneSpan(
  telemetry: Telemetry,
  start: SpanStart = retrieveStart(),
  status = 200,
): Span | undefined {
  const tracer = telemetry.tracer
  if (tracer === undefined) throw new Error('no tracer')
  const span = tracer.startSpan(start)
  const verdict = { outcome: 'valid', account: 'acme', tokenId: 'cl0k3n1d', source: 'retrieve' }
  tracer.end(span, start.startNs + 1_500_000n, verdict, status)
  return span
}
