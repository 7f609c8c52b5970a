import type { Protocol } from './config.js'
import { ProtoWriter } from './protobuf.js'
import {
  type AnyValue,
  anyValue,
  type Field,
  type KeyValue,
  type Kind,
  keyValue,
  type Schema,
} from './schema.js'

type Message = Readonly<Record<string, unknown>>

interface Compiled {
  name: string
  no: number
  kind: Kind | Schema
  repeated: boolean
  /** A list, left out when empty (proto3's default). */
  list: boolean
  /** `"name":`, for JSON. */
  key: string
}

// A schema's fields as an array, made once: walked for every message of every batch, an array
// is several times faster than `for…in` over the table.
const compiled = new WeakMap<Schema, Compiled[]>()
function fieldsOf(schema: Schema): Compiled[] {
  let fields = compiled.get(schema)
  if (fields === undefined) {
    fields = Object.entries(schema).map(([name, { no, kind, repeated = false }]) => ({
      name,
      no,
      kind,
      repeated,
      list: repeated || kind === 'packed-fixed64' || kind === 'packed-double',
      key: `${JSON.stringify(name)}:`,
    }))
    compiled.set(schema, fields)
  }
  return fields
}

function writeValue(w: ProtoWriter, no: number, kind: Kind | Schema, value: unknown): void {
  switch (kind) {
    case 'string':
      w.tag(no, 2).string(value as string)
      return
    case 'bool':
      w.tag(no, 0).varint(value ? 1 : 0)
      return
    case 'int64':
    case 'enum':
      w.tag(no, 0).varint(value as number | bigint)
      return
    case 'fixed32':
      w.tag(no, 5).fixed32(value as number)
      return
    case 'fixed64':
      w.tag(no, 1).fixed64(value as number | bigint)
      return
    case 'double':
      w.tag(no, 1).double(value as number)
      return
    case 'id':
      w.tag(no, 2).hex(value as string)
      return
    case 'packed-fixed64':
      w.tag(no, 2).nested((n) => {
        for (const v of value as number[]) n.fixed64(v)
      })
      return
    case 'packed-double':
      w.tag(no, 2).nested((n) => {
        for (const v of value as number[]) n.double(v)
      })
      return
    default: {
      const start = w.tag(no, 2).open()
      if (kind === keyValue) writeKeyValue(w, value as KeyValue)
      else writeMessage(w, kind, value as Message)
      w.close(start)
    }
  }
}

// Attributes are most of the messages sent (a dozen KeyValues a span): a KeyValue and its
// AnyValue are written without walking their tables, by the tables' field numbers.
const no = (schema: Schema, name: string) => (schema[name] as Field).no
const kv = { key: no(keyValue, 'key'), value: no(keyValue, 'value') }
const any = {
  string: no(anyValue, 'stringValue'),
  bool: no(anyValue, 'boolValue'),
  int: no(anyValue, 'intValue'),
  double: no(anyValue, 'doubleValue'),
}

function writeKeyValue(w: ProtoWriter, { key, value }: KeyValue): void {
  w.tag(kv.key, 2).string(key)
  const start = w.tag(kv.value, 2).open()
  writeAnyValue(w, value)
  w.close(start)
}

function writeAnyValue(w: ProtoWriter, v: AnyValue): void {
  if ('stringValue' in v) w.tag(any.string, 2).string(v.stringValue)
  else if ('intValue' in v) w.tag(any.int, 0).varint(v.intValue)
  else if ('boolValue' in v) w.tag(any.bool, 0).varint(v.boolValue ? 1 : 0)
  else w.tag(any.double, 1).double(v.doubleValue)
}

/**
 * A message's fields in protobuf. Every field given is written, a zero or empty one too: a oneof
 * (AnyValue's intValue 0, boolValue false) must be, and the others cost a few bytes. An empty
 * list is left out.
 */
function writeMessage(w: ProtoWriter, schema: Schema, message: Message): void {
  for (const { name, no, kind, repeated, list } of fieldsOf(schema)) {
    const value = message[name]
    if (value === undefined || (list && (value as unknown[]).length === 0)) continue
    if (repeated) for (const item of value as unknown[]) writeValue(w, no, kind, item)
    else writeValue(w, no, kind, value)
  }
}

// proto3 JSON: 64-bit integers as decimal strings, doubles that are not finite as names.
const integer = (v: unknown, round: (n: number) => number) =>
  typeof v === 'bigint' ? `"${v}"` : `"${Number.isFinite(v) ? round(v as number) : 0}"`
const double = (v: number) => (Number.isFinite(v) ? String(v) : `"${v}"`)

function jsonValue(kind: Kind | Schema, value: unknown): string {
  switch (kind) {
    case 'string':
      return JSON.stringify(value)
    case 'bool':
      return value ? 'true' : 'false'
    case 'int64':
      return integer(value, Math.trunc)
    case 'fixed64':
      return integer(value, Math.round)
    case 'enum':
    case 'fixed32':
      return String(value)
    case 'double':
      return double(value as number)
    case 'id':
      // Hex digits: nothing to escape.
      return `"${value}"`
    case 'packed-fixed64':
      return `[${(value as number[]).map((v) => integer(v, Math.round)).join(',')}]`
    case 'packed-double':
      return `[${(value as number[]).map(double).join(',')}]`
    default:
      return jsonMessage(kind, value as Message)
  }
}

/**
 * A message as OTLP/JSON text (proto3's JSON mapping, ids in hex, enums as numbers), written
 * directly: building objects to stringify them took twice as long.
 */
function jsonMessage(schema: Schema, message: Message): string {
  let out = ''
  for (const { name, kind, repeated, list, key } of fieldsOf(schema)) {
    const value = message[name]
    if (value === undefined || (list && (value as unknown[]).length === 0)) continue
    const text = repeated
      ? `[${(value as unknown[]).map((item) => jsonValue(kind, item)).join(',')}]`
      : jsonValue(kind, value)
    out += out === '' ? key + text : `,${key}${text}`
  }
  return `{${out}}`
}

/** An export request's body in `protocol`, with its Content-Type. */
export function encode(
  protocol: Protocol,
  schema: Schema,
  request: Message,
): { body: Buffer; contentType: string } {
  if (protocol === 'http/json') {
    return { body: Buffer.from(jsonMessage(schema, request)), contentType: 'application/json' }
  }
  const w = new ProtoWriter()
  writeMessage(w, schema, request)
  return { body: w.finish(), contentType: 'application/x-protobuf' }
}
