import { type OtelEnv, type TelemetryConfig, telemetryConfig } from './config.js'
import type { Telemetry, TelemetryDeps } from './start.js'

export type { ExportCounters } from './batch.js'
export { type OtelEnv, otelNames, type TelemetryConfig, telemetryConfig } from './config.js'
export type { VerificationRow } from './logs.js'
export type { MetricRegistry } from './metrics.js'
export type { Telemetry, TelemetryDeps } from './start.js'
export type { RequestAttributes, Span, Tracer, Verdict } from './tracer.js'

/**
 * The OpenTelemetry export the environment asks for (the standard OTEL_* variables), started;
 * undefined when none is asked for. Off, nothing of it is loaded but the reading of the
 * variables: the exporters, encoders and tracer are imported only when on.
 */
export function telemetryOf(env: OtelEnv, deps: TelemetryDeps): Promise<Telemetry | undefined> {
  return telemetryFrom(telemetryConfig(env), deps)
}

/** The same from the variables already read (`telemetryConfig`, at start-up with the rest). */
export async function telemetryFrom(
  config: TelemetryConfig | undefined,
  deps: TelemetryDeps,
): Promise<Telemetry | undefined> {
  if (config === undefined) return undefined
  const { startTelemetry } = await import('./start.js')
  return startTelemetry(config, deps)
}
