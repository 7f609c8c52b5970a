/**
 * A small generic protobuf decoder, and OTLP's field tables written out again from
 * opentelemetry-proto (not shared with src/telemetry/schema.ts, so that a wrong field number
 * there shows here): a protobuf request decodes to the OTLP/JSON shape a JSON request has
 * (ids in hex, 64-bit integers as decimal strings), and the two protocols compare equal.
 */

interface Raw {
  field: number
  wire: number
  value: bigint | Buffer
}

/** The fields of one message, in order, undecoded. */
export function rawFields(buf: Buffer): Raw[] {
  const out: Raw[] = []
  let pos = 0
  const varint = () => {
    let result = 0n
    let shift = 0n
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint')
      const byte = buf[pos++] as number
      result |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return result
      shift += 7n
      if (shift > 63n) throw new Error('varint too long')
    }
  }
  const take = (n: number) => {
    if (pos + n > buf.length) throw new Error('truncated field')
    const b = buf.subarray(pos, pos + n)
    pos += n
    return b
  }
  while (pos < buf.length) {
    const tag = Number(varint())
    const field = tag >>> 3
    const wire = tag & 7
    if (wire === 0) out.push({ field, wire, value: varint() })
    else if (wire === 1) out.push({ field, wire, value: take(8) })
    else if (wire === 2) out.push({ field, wire, value: take(Number(varint())) })
    else if (wire === 5) out.push({ field, wire, value: take(4) })
    else throw new Error(`wire type ${wire} of field ${field}`)
  }
  return out
}

type Type =
  | 'string'
  | 'hex'
  | 'enum'
  | 'int64'
  | 'bool'
  | 'fixed64'
  | 'fixed32'
  | 'double'
  | 'fixed64s'
  | 'doubles'
  | Table
type Table = { [field: number]: [name: string, type: Type, repeated?: 'repeated'] }

const anyValue: Table = {
  1: ['stringValue', 'string'],
  2: ['boolValue', 'bool'],
  3: ['intValue', 'int64'],
  4: ['doubleValue', 'double'],
}
const keyValue: Table = { 1: ['key', 'string'], 2: ['value', anyValue] }
const resource: Table = { 1: ['attributes', keyValue, 'repeated'] }
const scope: Table = { 1: ['name', 'string'], 2: ['version', 'string'] }

const span: Table = {
  1: ['traceId', 'hex'],
  2: ['spanId', 'hex'],
  3: ['traceState', 'string'],
  4: ['parentSpanId', 'hex'],
  5: ['name', 'string'],
  6: ['kind', 'enum'],
  7: ['startTimeUnixNano', 'fixed64'],
  8: ['endTimeUnixNano', 'fixed64'],
  9: ['attributes', keyValue, 'repeated'],
  15: ['status', { 2: ['message', 'string'], 3: ['code', 'enum'] }],
  16: ['flags', 'fixed32'],
}
const number: Table = {
  7: ['attributes', keyValue, 'repeated'],
  2: ['startTimeUnixNano', 'fixed64'],
  3: ['timeUnixNano', 'fixed64'],
  4: ['asDouble', 'double'],
  6: ['asInt', 'fixed64'],
}
const histogram: Table = {
  9: ['attributes', keyValue, 'repeated'],
  2: ['startTimeUnixNano', 'fixed64'],
  3: ['timeUnixNano', 'fixed64'],
  4: ['count', 'fixed64'],
  5: ['sum', 'double'],
  6: ['bucketCounts', 'fixed64s'],
  7: ['explicitBounds', 'doubles'],
}
const metric: Table = {
  1: ['name', 'string'],
  2: ['description', 'string'],
  3: ['unit', 'string'],
  5: ['gauge', { 1: ['dataPoints', number, 'repeated'] }],
  7: [
    'sum',
    {
      1: ['dataPoints', number, 'repeated'],
      2: ['aggregationTemporality', 'enum'],
      3: ['isMonotonic', 'bool'],
    },
  ],
  9: [
    'histogram',
    { 1: ['dataPoints', histogram, 'repeated'], 2: ['aggregationTemporality', 'enum'] },
  ],
}
const logRecord: Table = {
  1: ['timeUnixNano', 'fixed64'],
  11: ['observedTimeUnixNano', 'fixed64'],
  2: ['severityNumber', 'enum'],
  3: ['severityText', 'string'],
  5: ['body', anyValue],
  6: ['attributes', keyValue, 'repeated'],
  8: ['flags', 'fixed32'],
  9: ['traceId', 'hex'],
  10: ['spanId', 'hex'],
}

const envelope = (
  resourceName: string,
  scopeName: string,
  itemsName: string,
  item: Table,
): Table => ({
  1: [
    resourceName,
    {
      1: ['resource', resource],
      2: [scopeName, { 1: ['scope', scope], 2: [itemsName, item, 'repeated'] }, 'repeated'],
    },
    'repeated',
  ],
})

export const tables = {
  traces: envelope('resourceSpans', 'scopeSpans', 'spans', span),
  metrics: envelope('resourceMetrics', 'scopeMetrics', 'metrics', metric),
  logs: envelope('resourceLogs', 'scopeLogs', 'logRecords', logRecord),
}

function packed(buf: Buffer, read: (b: Buffer, at: number) => unknown): unknown[] {
  const out: unknown[] = []
  for (let at = 0; at < buf.length; at += 8) out.push(read(buf, at))
  return out
}

function convert(type: Type, raw: Raw): unknown {
  const b = raw.value as Buffer
  switch (type) {
    case 'string':
      return b.toString('utf8')
    case 'hex':
      return b.toString('hex')
    case 'enum':
      return Number(raw.value as bigint)
    case 'int64':
      return BigInt.asIntN(64, raw.value as bigint).toString()
    case 'bool':
      return (raw.value as bigint) !== 0n
    case 'fixed64':
      return b.readBigUInt64LE(0).toString()
    case 'fixed32':
      return b.readUInt32LE(0)
    case 'double':
      return b.readDoubleLE(0)
    case 'fixed64s':
      return packed(b, (x, at) => x.readBigUInt64LE(at).toString())
    case 'doubles':
      return packed(b, (x, at) => x.readDoubleLE(at))
    default:
      return decodeMessage(b, type)
  }
}

/** A message by its table; a field the table does not know throws (a wrong number in src). */
export function decodeMessage(buf: Buffer, table: Table): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const raw of rawFields(buf)) {
    const entry = table[raw.field]
    if (entry === undefined) throw new Error(`unknown field ${raw.field} (wire ${raw.wire})`)
    const [name, type, repeated] = entry
    const value = convert(type, raw)
    if (repeated) out[name] = [...((out[name] as unknown[]) ?? []), value]
    else out[name] = value
  }
  return out
}
