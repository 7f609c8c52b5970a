import type { NanoClock } from './clock.js'
import type { Sampling } from './config.js'
import { type AttributeValue, keyValues } from './schema.js'
import {
  keptTracestate,
  newSpanId,
  newTraceId,
  type ParentContext,
  parseTraceparent,
} from './trace-context.js'

/** What the span of a request says of it: its route's pattern, never its URL. */
export interface RequestAttributes {
  method: string
  /** The route's pattern (`/tokens/v2/:username`); none for a request no route matched. */
  route?: string | undefined
  scheme: 'http' | 'https'
  clientAddress?: string | undefined
  serverPort?: number | undefined
}

/** What the verification of a request came to: ids and names, never a token string. */
export interface Verdict {
  outcome?: string | undefined
  account?: string | undefined
  tokenId?: string | undefined
  source?: string | undefined
}

export interface SpanStart {
  /** The request's headers, as Node gives them. */
  traceparent?: string | string[] | undefined
  tracestate?: string | string[] | undefined
  /** Epoch ns (`tracer.clock(performance.now())`). */
  startNs: bigint
  attributes: RequestAttributes
}

/** A server span begun and not yet ended. */
export interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parent: ParentContext | undefined
  readonly traceState: string | undefined
  readonly name: string
  readonly startNs: bigint
  readonly attributes: [string, AttributeValue][]
  ended: boolean
  endNs: bigint
  /** Answered 5xx: the span's status is ERROR. */
  failed: boolean
}

const spanKindServer = 2
const statusError = 2
// Span.flags: the W3C sampled flag, and bit 8 (whether the parent is remote is known) with
// bit 9 (it is: the caller's span).
const sampledFlag = 0x01
const hasIsRemote = 0x100
const isRemote = 0x200

// HTTP semantic conventions: any other method is `_OTHER`, the name as sent beside it.
const methods = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
  'QUERY',
])

/** TraceIdRatioBased: the trace's last 56 bits (random in W3C level 2 ids) under the ratio. */
function ratioSampled(traceId: string, ratio: number): boolean {
  if (ratio >= 1) return true
  if (ratio <= 0) return false
  return Number.parseInt(traceId.slice(18), 16) < ratio * 2 ** 56
}

/**
 * Server spans, one per request, continuing the caller's trace when its `traceparent` is valid
 * (same trace id, its span as parent, its tracestate kept). A span not sampled is not made:
 * `startSpan` answers undefined and the request pays for one header parse.
 */
export class Tracer {
  constructor(
    private readonly sampling: Sampling,
    /** Where ended spans go (the batch processor). */
    private readonly sink: { add(span: Span): void },
    /** Epoch ns of a `performance.now()` reading. */
    readonly clock: NanoClock,
  ) {}

  /** The trace id of a span to make, or undefined for one not sampled (no id drawn for it). */
  private sampledTrace(parent: ParentContext | undefined): string | undefined {
    const { root, ratio, parentBased } = this.sampling
    if (parent !== undefined && parentBased) return parent.sampled ? parent.traceId : undefined
    if (root === 'always_off') return undefined
    const traceId = parent?.traceId ?? newTraceId()
    return root === 'always_on' || ratioSampled(traceId, ratio) ? traceId : undefined
  }

  startSpan({ traceparent, tracestate, startNs, attributes: a }: SpanStart): Span | undefined {
    const parent = parseTraceparent(traceparent)
    const traceId = this.sampledTrace(parent)
    if (traceId === undefined) return undefined
    const method = methods.has(a.method) ? a.method : '_OTHER'
    const attributes: [string, AttributeValue][] = [['http.request.method', method]]
    if (method === '_OTHER') attributes.push(['http.request.method_original', a.method])
    if (a.route !== undefined) attributes.push(['http.route', a.route])
    attributes.push(['url.scheme', a.scheme])
    if (a.clientAddress !== undefined) attributes.push(['client.address', a.clientAddress])
    if (a.serverPort !== undefined) attributes.push(['server.port', a.serverPort])
    const verb = method === '_OTHER' ? 'HTTP' : method
    const name = a.route === undefined ? verb : `${verb} ${a.route}`
    return {
      traceId,
      spanId: newSpanId(),
      parent,
      traceState: parent === undefined ? undefined : keptTracestate(tracestate),
      name,
      startNs,
      attributes,
      ended: false,
      endNs: startNs,
      failed: false,
    }
  }

  /** Ends `span` (once; none: not sampled) with the answer's status and the verdict. */
  end(span: Span | undefined, endNs: bigint, verdict: Verdict, statusCode: number): void {
    if (span === undefined || span.ended) return
    span.ended = true
    span.endNs = endNs < span.startNs ? span.startNs : endNs
    const attributes = span.attributes
    attributes.push(['http.response.status_code', statusCode])
    // Server spans: a 4xx is the client's error, not the span's.
    if (statusCode >= 500) {
      span.failed = true
      attributes.push(['error.type', String(statusCode)])
    }
    if (verdict.outcome !== undefined) attributes.push(['tessera.outcome', verdict.outcome])
    if (verdict.account !== undefined) attributes.push(['tessera.account', verdict.account])
    if (verdict.tokenId !== undefined) attributes.push(['tessera.token_id', verdict.tokenId])
    if (verdict.source !== undefined) attributes.push(['tessera.source', verdict.source])
    this.sink.add(span)
  }
}

/** An ended span in its OTLP shape: made when its batch is exported, off the request's path. */
export function otlpSpan(span: Span) {
  const { parent } = span
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    traceState: span.traceState,
    parentSpanId: parent?.spanId,
    name: span.name,
    kind: spanKindServer,
    startTimeUnixNano: span.startNs,
    endTimeUnixNano: span.endNs,
    attributes: keyValues(span.attributes),
    status: span.failed ? { code: statusError } : undefined,
    flags: sampledFlag | hasIsRemote | (parent === undefined ? 0 : isRemote),
  }
}
