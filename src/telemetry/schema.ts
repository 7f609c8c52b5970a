/**
 * The OTLP messages Tessera sends, as tables of the fields it fills (field numbers from
 * opentelemetry-proto's trace.proto, metrics.proto, logs.proto, common.proto): one table
 * serves both encodings, protobuf and the proto3 JSON mapping (codec.ts).
 */

export type Kind =
  | 'string'
  | 'bool'
  | 'int64'
  | 'enum'
  | 'fixed32'
  | 'fixed64'
  | 'double'
  /** bytes, hex in OTLP/JSON (trace and span ids). */
  | 'id'
  | 'packed-fixed64'
  | 'packed-double'

export interface Field {
  no: number
  kind: Kind | Schema
  repeated?: boolean
}

export interface Schema {
  readonly [name: string]: Field
}

const f = (no: number, kind: Kind | Schema): Field => ({ no, kind })
const list = (no: number, kind: Schema): Field => ({ no, kind, repeated: true })

export const anyValue: Schema = {
  stringValue: f(1, 'string'),
  boolValue: f(2, 'bool'),
  intValue: f(3, 'int64'),
  doubleValue: f(4, 'double'),
}
export const keyValue: Schema = { key: f(1, 'string'), value: f(2, anyValue) }
const resource: Schema = { attributes: list(1, keyValue) }
const scope: Schema = { name: f(1, 'string'), version: f(2, 'string') }

const span: Schema = {
  traceId: f(1, 'id'),
  spanId: f(2, 'id'),
  traceState: f(3, 'string'),
  parentSpanId: f(4, 'id'),
  name: f(5, 'string'),
  kind: f(6, 'enum'),
  startTimeUnixNano: f(7, 'fixed64'),
  endTimeUnixNano: f(8, 'fixed64'),
  attributes: list(9, keyValue),
  status: f(15, { message: f(2, 'string'), code: f(3, 'enum') }),
  flags: f(16, 'fixed32'),
}

/** ExportTraceServiceRequest. */
export const traceRequest: Schema = {
  resourceSpans: list(1, {
    resource: f(1, resource),
    scopeSpans: list(2, { scope: f(1, scope), spans: list(2, span) }),
  }),
}

const numberPoint: Schema = {
  attributes: list(7, keyValue),
  startTimeUnixNano: f(2, 'fixed64'),
  timeUnixNano: f(3, 'fixed64'),
  asDouble: f(4, 'double'),
}

const histogramPoint: Schema = {
  attributes: list(9, keyValue),
  startTimeUnixNano: f(2, 'fixed64'),
  timeUnixNano: f(3, 'fixed64'),
  count: f(4, 'fixed64'),
  sum: f(5, 'double'),
  bucketCounts: f(6, 'packed-fixed64'),
  explicitBounds: f(7, 'packed-double'),
}

const metric: Schema = {
  name: f(1, 'string'),
  description: f(2, 'string'),
  unit: f(3, 'string'),
  gauge: f(5, { dataPoints: list(1, numberPoint) }),
  sum: f(7, {
    dataPoints: list(1, numberPoint),
    aggregationTemporality: f(2, 'enum'),
    isMonotonic: f(3, 'bool'),
  }),
  histogram: f(9, { dataPoints: list(1, histogramPoint), aggregationTemporality: f(2, 'enum') }),
}

/** ExportMetricsServiceRequest. */
export const metricsRequest: Schema = {
  resourceMetrics: list(1, {
    resource: f(1, resource),
    scopeMetrics: list(2, { scope: f(1, scope), metrics: list(2, metric) }),
  }),
}

const logRecord: Schema = {
  timeUnixNano: f(1, 'fixed64'),
  observedTimeUnixNano: f(11, 'fixed64'),
  severityNumber: f(2, 'enum'),
  severityText: f(3, 'string'),
  body: f(5, anyValue),
  attributes: list(6, keyValue),
}

/** ExportLogsServiceRequest. */
export const logsRequest: Schema = {
  resourceLogs: list(1, {
    resource: f(1, resource),
    scopeLogs: list(2, { scope: f(1, scope), logRecords: list(2, logRecord) }),
  }),
}

/** AnyValue, of the kinds Tessera sends (one of the fields is set). */
export type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: number }
  | { doubleValue: number }

export interface KeyValue {
  key: string
  value: AnyValue
}

export type AttributeValue = string | number | boolean

/** Attributes as KeyValues: whole numbers as intValue, others as doubleValue. */
export function keyValues(attributes: Iterable<readonly [string, AttributeValue]>): KeyValue[] {
  const out: KeyValue[] = []
  for (const [key, v] of attributes) {
    const value: AnyValue =
      typeof v === 'string'
        ? { stringValue: v }
        : typeof v === 'boolean'
          ? { boolValue: v }
          : Number.isSafeInteger(v)
            ? { intValue: v }
            : { doubleValue: v }
    out.push({ key, value })
  }
  return out
}
