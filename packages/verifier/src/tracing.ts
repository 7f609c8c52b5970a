import type { Verification } from './answers.js'
import { outcomeOfReason, outcomes, valid } from './outcomes.js'
import type { MeterKey } from './usage.js'

/**
 * The part of `@opentelemetry/api` the verifier uses: the module itself fits (its `trace` and
 * `context`). Declared here, not imported: the package has no dependency on it.
 */
export interface OtelApi {
  trace: {
    getActiveSpan(): unknown
    getTracer(name: string): OtelTracer
  }
  context: { active(): unknown }
}

export interface OtelTracer {
  startSpan(name: string, options: OtelSpanOptions, context: unknown): { end(time: number): void }
}

export interface OtelSpanOptions {
  /** SpanKind.INTERNAL is 0. */
  kind: number
  /** Epoch ms, with a fraction. */
  startTime: number
  attributes: Record<string, string | boolean>
}

/** What a span of verify() says beyond its answer, told as the decision goes. */
export interface Seen {
  /** Whom it is counted against; undefined: no one (TesseraUnavailable). */
  who: MeterKey | undefined
  /** Decided from a cached answer (Tessera not asked). */
  cached: boolean
}

const spanKindInternal = 0
const otelModule = '@opentelemetry/api'

/** The OpenTelemetry API when the application has it installed; undefined, silently, if not. */
export async function loadOtel(specifier = otelModule): Promise<OtelApi | undefined> {
  try {
    // A variable specifier: resolved from the application at run time, never bundled or typed.
    const mod = await import(specifier)
    const api = (typeof mod.trace === 'object' ? mod : mod.default) as Partial<OtelApi> | undefined
    const usable =
      typeof api?.trace?.getActiveSpan === 'function' &&
      typeof api.trace.getTracer === 'function' &&
      typeof api.context?.active === 'function'
    return usable ? (api as OtelApi) : undefined
  } catch {
    return undefined
  }
}

/**
 * Adds a span per decision to the caller's trace: a child of its active span, named
 * `tessera.verify`, from the verification's start to its decision. Made once the decision is
 * known (with its start time), so that a `verifyCached` that answers `undefined` (the caller
 * then calls `verify`) makes none. A refusal is not an error: the status is never set. Tracing
 * never fails a verification: what the API throws is ignored.
 */
export class Tracing {
  private readonly tracer: OtelTracer

  constructor(private readonly api: OtelApi) {
    this.tracer = api.trace.getTracer('@tessera/verifier')
  }

  /** The caller's context when it has an active span (else there is no trace to add to). */
  parent(): unknown {
    try {
      return this.api.trace.getActiveSpan() === undefined ? undefined : this.api.context.active()
    } catch {
      return undefined
    }
  }

  /**
   * The span of one decision, begun at `started` (performance.now()): whom it is counted against
   * (`who`; undefined for TesseraUnavailable, which has no outcome) and whether the answer was
   * cached (Tessera not asked).
   */
  span(
    parent: unknown,
    started: number,
    answer: Verification,
    who: MeterKey | undefined,
    cached: boolean,
  ): void {
    const outcome = answer.valid ? valid : outcomeOfReason[answer.reason]
    const attributes: Record<string, string | boolean> = {}
    if (outcome >= 0 && who !== undefined) {
      attributes['tessera.outcome'] = outcomes[outcome] as string
      attributes['tessera.account'] = who.account
      attributes['tessera.token_id'] = who.token
    }
    attributes['tessera.source'] = 'verifier'
    attributes['tessera.cached'] = cached
    const origin = performance.timeOrigin
    try {
      this.tracer
        .startSpan(
          'tessera.verify',
          { kind: spanKindInternal, startTime: origin + started, attributes },
          parent,
        )
        .end(origin + performance.now())
    } catch {
      // A tracer that throws does not fail the verification.
    }
  }
}

/**
 * Tracing as the options say: off with `tracing: false`; the given `otel`; else
 * `@opentelemetry/api` imported once, in the background (`use` is called if it loads).
 */
export function startTracing(
  options: { tracing?: boolean; otel?: OtelApi },
  use: (tracing: Tracing) => void,
): void {
  if (options.tracing === false) return
  if (options.otel !== undefined) {
    use(new Tracing(options.otel))
    return
  }
  loadOtel()
    .then((api) => {
      if (api !== undefined) use(new Tracing(api))
    })
    .catch(() => {})
}
