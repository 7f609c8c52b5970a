import { booleanOf, choiceOf, integerOf, type OtelEnv, pairsOf, setting, urlOf } from './values.js'

export type { OtelEnv }

/** Every variable the telemetry reads: the OpenTelemetry SDK's standard names. */
export const otelNames = [
  'OTEL_SDK_DISABLED',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
  'OTEL_EXPORTER_OTLP_CERTIFICATE',
  ...(['TRACES', 'METRICS', 'LOGS'] as const).flatMap(
    (s) =>
      [
        `OTEL_${s}_EXPORTER`,
        `OTEL_EXPORTER_OTLP_${s}_ENDPOINT`,
        `OTEL_EXPORTER_OTLP_${s}_HEADERS`,
        `OTEL_EXPORTER_OTLP_${s}_PROTOCOL`,
        `OTEL_EXPORTER_OTLP_${s}_TIMEOUT`,
        `OTEL_EXPORTER_OTLP_${s}_CERTIFICATE`,
      ] as const,
  ),
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_METRIC_EXPORT_INTERVAL',
  'OTEL_METRIC_EXPORT_TIMEOUT',
  ...(['BSP', 'BLRP'] as const).flatMap(
    (p) =>
      [
        `OTEL_${p}_SCHEDULE_DELAY`,
        `OTEL_${p}_EXPORT_TIMEOUT`,
        `OTEL_${p}_MAX_QUEUE_SIZE`,
        `OTEL_${p}_MAX_EXPORT_BATCH_SIZE`,
      ] as const,
  ),
]

export type Signal = 'traces' | 'metrics' | 'logs'
export type Protocol = 'http/protobuf' | 'http/json'

/** Where and how one signal is sent. */
export interface Destination {
  url: URL
  /** Lowercase names. */
  headers: Record<string, string>
  protocol: Protocol
  /** Of one export request, answer included (a batch processor's export timeout may be shorter). */
  timeoutMs: number
  /** A PEM file of the certificate authorities to trust instead of the system's (https). */
  certificate?: { file: string; variable: string } | undefined
}

/** A batch processor's bounds (OTEL_BSP_* for spans, OTEL_BLRP_* for log records). */
export interface Batching {
  maxQueueSize: number
  maxExportBatchSize: number
  scheduleDelayMs: number
  exportTimeoutMs: number
}

/** OTEL_TRACES_SAMPLER: the decision for a trace Tessera starts, and whether a parent's wins. */
export interface Sampling {
  root: 'always_on' | 'always_off' | 'ratio'
  ratio: number
  parentBased: boolean
}

export interface TelemetryConfig {
  serviceName: string
  /** OTEL_RESOURCE_ATTRIBUTES, as given. */
  resource: Map<string, string>
  traces?: Destination & { sampling: Sampling; batching: Batching }
  metrics?: Destination & { intervalMs: number }
  logs?: Destination & { batching: Batching }
}

const signalPath: Record<Signal, string> = {
  traces: 'v1/traces',
  metrics: 'v1/metrics',
  logs: 'v1/logs',
}

/**
 * Whether `signal` is exported: its OTEL_*_EXPORTER (`otlp` or `none`), by default `otlp` when
 * an endpoint is set for it. Nothing set: no telemetry (the spec's default would send to
 * localhost:4318; Tessera sends nothing unless asked).
 */
function exported(env: OtelEnv, signal: Signal): boolean {
  const upper = signal.toUpperCase()
  const name = `OTEL_${upper}_EXPORTER`
  const value = setting(env, name)
  if (value === undefined) {
    return (
      setting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined ||
      setting(env, `OTEL_EXPORTER_OTLP_${upper}_ENDPOINT`) !== undefined
    )
  }
  const list = value.split(',').map((v) => v.trim())
  const other = list.find((v) => v !== 'otlp' && v !== 'none' && v !== '')
  if (other !== undefined) throw new Error(`${name}=${other} is not supported: otlp or none`)
  return list.includes('otlp')
}

/** The OTEL_EXPORTER_OTLP_* settings of `signal`: its own names first, then the general ones. */
function destination(env: OtelEnv, signal: Signal): Destination {
  const upper = signal.toUpperCase()
  const own = (what: string) => `OTEL_EXPORTER_OTLP_${upper}_${what}`
  const general = (what: string) => `OTEL_EXPORTER_OTLP_${what}`
  const pick = (what: string) => (setting(env, own(what)) === undefined ? general(what) : own(what))

  const endpoint = setting(env, own('ENDPOINT'))
  const base = setting(env, general('ENDPOINT')) ?? 'http://localhost:4318'
  const url =
    endpoint === undefined
      ? new URL(
          `${base}${base.endsWith('/') ? '' : '/'}${signalPath[signal]}`,
          urlOf(general('ENDPOINT'), base),
        )
      : urlOf(own('ENDPOINT'), endpoint)

  const protocolName = pick('PROTOCOL')
  if (setting(env, protocolName) === 'grpc') {
    throw new Error(
      `${protocolName}=grpc is not supported: Tessera sends OTLP over HTTP (http/protobuf or http/json)`,
    )
  }
  const protocol = choiceOf(env, protocolName, ['http/protobuf', 'http/json'], 'http/protobuf')
  const headers = Object.fromEntries([
    ...pairsOf(env, general('HEADERS'), true),
    ...pairsOf(env, own('HEADERS'), true),
  ])
  const timeoutMs = integerOf(env, pick('TIMEOUT'), 10_000)
  const variable = pick('CERTIFICATE')
  const file = setting(env, variable)
  const certificate = file === undefined ? undefined : { file, variable }
  return { url, headers, protocol, timeoutMs, ...(certificate && { certificate }) }
}

function batching(env: OtelEnv, prefix: 'BSP' | 'BLRP', scheduleDelayMs: number): Batching {
  const name = (what: string) => `OTEL_${prefix}_${what}`
  const maxQueueSize = integerOf(env, name('MAX_QUEUE_SIZE'), 2048)
  const maxExportBatchSize = integerOf(env, name('MAX_EXPORT_BATCH_SIZE'), 512)
  if (maxExportBatchSize > maxQueueSize) {
    throw new Error(
      `${name('MAX_EXPORT_BATCH_SIZE')} (${maxExportBatchSize}) must not exceed ${name('MAX_QUEUE_SIZE')} (${maxQueueSize})`,
    )
  }
  return {
    maxQueueSize,
    maxExportBatchSize,
    scheduleDelayMs: integerOf(env, name('SCHEDULE_DELAY'), scheduleDelayMs),
    exportTimeoutMs: integerOf(env, name('EXPORT_TIMEOUT'), 30_000),
  }
}

const samplers = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const

function sampling(env: OtelEnv): Sampling {
  const sampler = choiceOf(env, 'OTEL_TRACES_SAMPLER', samplers, 'parentbased_always_on')
  const parentBased = sampler.startsWith('parentbased_')
  const root = sampler.replace('parentbased_', '')
  if (root !== 'traceidratio') return { root: root as Sampling['root'], ratio: 1, parentBased }
  const arg = setting(env, 'OTEL_TRACES_SAMPLER_ARG')
  const ratio = arg === undefined ? 1 : /^\d*\.?\d+$/.test(arg) ? Number(arg) : Number.NaN
  if (!(ratio >= 0 && ratio <= 1)) {
    throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, not ${arg}`)
  }
  return { root: 'ratio', ratio, parentBased }
}

/**
 * The telemetry the environment asks for, or undefined: none asked for (no endpoint, no
 * exporter named), or OTEL_SDK_DISABLED=true. A value that cannot be used throws an Error of
 * one line naming its variable.
 */
export function telemetryConfig(env: OtelEnv): TelemetryConfig | undefined {
  if (booleanOf(env, 'OTEL_SDK_DISABLED')) return undefined
  const on = { traces: exported(env, 'traces'), metrics: exported(env, 'metrics') }
  const logs = exported(env, 'logs')
  if (!on.traces && !on.metrics && !logs) return undefined
  const resource = pairsOf(env, 'OTEL_RESOURCE_ATTRIBUTES', false)
  const config: TelemetryConfig = {
    serviceName: setting(env, 'OTEL_SERVICE_NAME') ?? resource.get('service.name') ?? 'tessera',
    resource,
  }
  if (on.traces) {
    config.traces = {
      ...destination(env, 'traces'),
      sampling: sampling(env),
      batching: batching(env, 'BSP', 5000),
    }
  }
  if (on.metrics) {
    const intervalMs = integerOf(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000)
    const exportTimeoutMs = integerOf(env, 'OTEL_METRIC_EXPORT_TIMEOUT', 30_000)
    const to = destination(env, 'metrics')
    config.metrics = { ...to, timeoutMs: Math.min(to.timeoutMs, exportTimeoutMs), intervalMs }
  }
  if (logs) config.logs = { ...destination(env, 'logs'), batching: batching(env, 'BLRP', 1000) }
  return config
}
