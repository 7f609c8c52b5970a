import { randomBytes } from 'node:crypto'

/** A caller's span, as its `traceparent` names it (W3C Trace Context). */
export interface ParentContext {
  /** 32 lowercase hex digits. */
  traceId: string
  /** 16 lowercase hex digits. */
  spanId: string
  sampled: boolean
}

const zeroTrace = '0'.repeat(32)
const zeroSpan = '0'.repeat(16)
const lowerHex = /^[0-9a-f]+$/

/**
 * The parent a `traceparent` header names, or undefined for a header to ignore (a new trace
 * starts). Version 00 is exactly 55 characters; a later version is read for its first four
 * fields, which must be followed by the end or a dash (the spec's rule for versions it does not
 * know); version ff, upper-case hex, all-zero ids and repeated headers are refused.
 */
export function parseTraceparent(header: string | string[] | undefined): ParentContext | undefined {
  if (typeof header !== 'string' || header.length < 55) return undefined
  const version = header.slice(0, 2)
  if (!lowerHex.test(version) || version === 'ff') return undefined
  if (version === '00' ? header.length !== 55 : header.length > 55 && header[55] !== '-') {
    return undefined
  }
  if (header[2] !== '-' || header[35] !== '-' || header[52] !== '-') return undefined
  const traceId = header.slice(3, 35)
  const spanId = header.slice(36, 52)
  const flags = header.slice(53, 55)
  if (!lowerHex.test(traceId) || !lowerHex.test(spanId) || !lowerHex.test(flags)) return undefined
  if (traceId === zeroTrace || spanId === zeroSpan) return undefined
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 }
}

/** A `traceparent` (version 00) naming a span. */
export const formatTraceparent = (traceId: string, spanId: string, sampled: boolean) =>
  `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`

/** The spec's bound: a vendor may drop a longer tracestate; Tessera drops it whole. */
export const maxTracestate = 512

/**
 * The `tracestate` to keep with a span, unchanged: repeated headers joined as HTTP joins them;
 * none when longer than `maxTracestate` or not printable ASCII (never a vendor's list cut in two).
 */
export function keptTracestate(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header.join(',') : header
  if (value === undefined || value === '' || value.length > maxTracestate) return undefined
  return /^[\x20-\x7e]*$/.test(value) ? value : undefined
}

// Random bytes drawn in blocks (as src/ids.ts does): a span needs 8 or 24 of them, and one call
// to the system source serves about 200 spans.
let pool = Buffer.alloc(0)
let offset = 0

function randomHex(bytes: number): string {
  for (;;) {
    if (offset + bytes > pool.length) {
      pool = randomBytes(4096)
      offset = 0
    }
    const hex = pool.toString('hex', offset, offset + bytes)
    offset += bytes
    // All zeros is the invalid id: drawn once in 2^64 spans, but then drawn again.
    if (hex !== zeroTrace && hex !== zeroSpan) return hex
  }
}

/** A new trace id: 16 random bytes, 32 hex digits. */
export const newTraceId = () => randomHex(16)
/** A new span id: 8 random bytes, 16 hex digits. */
export const newSpanId = () => randomHex(8)
