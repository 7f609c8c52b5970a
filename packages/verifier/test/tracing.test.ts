import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  createVerifier,
  type OtelApi,
  type OtelSpanOptions,
  type Verifier,
  type VerifierOptions,
} from '../src/index.js'
import { loadOtel } from '../src/tracing.js'
import { active, type FakeTessera, fakeKey, startFakeTessera, tokenOf } from './fake-tessera.js'

/**
 * With OpenTelemetry in the application, each decision adds a `tessera.verify` span to the
 * caller's active trace: through the `otel` seam here (a fake of `@opentelemetry/api`'s
 * `trace` and `context`), and through the real API when it is installed.
 */

let tessera: FakeTessera
let verifier: Verifier

const pk = tokenOf('pk', { u: 'acme', a: 'cpk' })
const tk = tokenOf('tk', { u: 'acme', exp: 4_000_000_000, iat: 1, scopes: ['a'] })
const revoked = tokenOf('pk', { u: 'globex', a: 'cgone' })

interface Made {
  name: string
  options: OtelSpanOptions
  parent: unknown
  ended: number[]
  status: unknown[]
}

/** A fake of the API: an active span while `activeSpan` is set; the spans made, in order. */
interface FakeOtel {
  activeSpan: unknown
  spans: Made[]
  tracers: string[]
  calls: number
  parent: { context: string }
  api: OtelApi
}

function fakeOtel(): FakeOtel {
  const parent = { context: 'of the caller' }
  const fake: FakeOtel = {
    activeSpan: { spanId: 'caller' } as unknown,
    spans: [] as Made[],
    tracers: [] as string[],
    calls: 0,
    parent,
    api: {
      trace: {
        getActiveSpan: () => {
          fake.calls++
          return fake.activeSpan
        },
        getTracer: (name: string) => {
          fake.tracers.push(name)
          return {
            startSpan: (spanName: string, options: OtelSpanOptions, context: unknown) => {
              const made: Made = { name: spanName, options, parent: context, ended: [], status: [] }
              fake.spans.push(made)
              return {
                end: (time: number) => made.ended.push(time),
                setStatus: (status: unknown) => made.status.push(status),
              }
            },
          }
        },
      },
      context: { active: () => parent },
    },
  }
  return fake
}

let otel: ReturnType<typeof fakeOtel>

async function start(options: Partial<VerifierOptions> = {}) {
  verifier = createVerifier({
    url: tessera.url,
    adminKey: fakeKey,
    onError: () => {},
    reportEveryMs: 3_600_000,
    otel: otel.api,
    ...options,
  })
  await verifier.ready()
}

const attributesOf = (spans: Made[]) => spans.map((s) => s.options.attributes)

beforeEach(async () => {
  otel = fakeOtel()
  tessera = await startFakeTessera()
  tessera.answers.set(pk, active({ username: 'acme', usage: 'pk', id: 'cpk', scope: 'a' }))
  tessera.answers.set(tk, active({ username: 'acme', usage: 'tk', scope: 'a', exp: 4_000_000_000 }))
})

afterEach(async () => {
  await verifier?.close()
  await tessera.stop()
})

describe('tracing through the otel seam', () => {
  it('adds a tessera.verify span per decision, a child of the active span', async () => {
    await start()
    const before = performance.timeOrigin + performance.now()
    await verifier.verify(pk)
    verifier.verifyCached(pk, { scope: 'b' })
    await verifier.verify(pk)
    await verifier.verify(tk)
    await verifier.verify(revoked)
    await verifier.verify('not-a-token')
    const after = performance.timeOrigin + performance.now()
    expect(otel.tracers).toEqual(['@tessera/verifier'])
    expect(otel.spans.map((s) => [s.name, s.options.kind, s.parent])).toEqual(
      Array.from({ length: 6 }, () => ['tessera.verify', 0, otel.parent]),
    )
    const span = (account: string, token: string, outcome: string, cached: boolean) => ({
      'tessera.outcome': outcome,
      'tessera.account': account,
      'tessera.token_id': token,
      'tessera.source': 'verifier',
      'tessera.cached': cached,
    })
    expect(attributesOf(otel.spans)).toEqual([
      span('acme', 'cpk', 'valid', false),
      span('acme', 'cpk', 'scope_missing', true),
      span('acme', 'cpk', 'valid', true),
      span('acme', '', 'valid', false),
      span('globex', 'cgone', 'revoked', false),
      span('', '', 'malformed', false),
    ])
    // Each ended once, at its decision, after its start; a refusal sets no status (no error).
    for (const s of otel.spans) {
      expect(s.ended).toHaveLength(1)
      expect(s.options.startTime).toBeGreaterThanOrEqual(before)
      expect(s.ended[0]).toBeGreaterThanOrEqual(s.options.startTime)
      expect(s.ended[0]).toBeLessThanOrEqual(after)
      expect(s.status).toEqual([])
    }
  })

  it('covers the wait for Tessera in the span of a first verification', async () => {
    await start()
    tessera.delayMs = 60
    await verifier.verify(pk)
    const [s] = otel.spans
    expect((s?.ended[0] as number) - (s?.options.startTime as number)).toBeGreaterThanOrEqual(55)
  })

  it('makes no span for a verifyCached that answers undefined; TesseraUnavailable names no outcome', async () => {
    await start()
    expect(verifier.verifyCached(pk)).toBeUndefined()
    await tessera.stop()
    const other = tokenOf('pk', { u: 'acme', a: 'cother' })
    expect(await verifier.verify(other)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    await tessera.restart()
    expect(otel.spans).toHaveLength(1)
    // TesseraUnavailable is no outcome: the span says only where it came from.
    expect(attributesOf(otel.spans)).toEqual([
      { 'tessera.source': 'verifier', 'tessera.cached': false },
    ])
  })

  it('makes none without an active span', async () => {
    await start()
    otel.activeSpan = undefined
    await verifier.verify(pk)
    verifier.verifyCached(pk)
    await verifier.verify(revoked)
    expect(otel.spans).toEqual([])
    expect(otel.calls).toBe(3)
  })

  it('asks nothing of OpenTelemetry with tracing: false', async () => {
    await start({ tracing: false })
    await verifier.verify(pk)
    verifier.verifyCached(pk)
    expect([otel.calls, otel.tracers, otel.spans]).toEqual([0, [], []])
  })

  it('never fails a verification because the tracer threw', async () => {
    otel.api.trace.getTracer = () => ({
      startSpan: () => {
        throw new Error('broken tracer')
      },
    })
    await start()
    expect(await verifier.verify(pk)).toMatchObject({ valid: true, account: 'acme' })
  })
})

describe('the real @opentelemetry/api', () => {
  it('is loaded when installed; a module that is not there loads nothing and says nothing', async () => {
    const warn = vi.spyOn(process, 'emitWarning')
    expect(await loadOtel('@tessera/no-such-module')).toBeUndefined()
    expect(warn).not.toHaveBeenCalled()
    warn.mockRestore()
    const api = await loadOtel()
    // Installed in this repository (a dependency of prom-client); the package does not need it.
    expect(typeof api?.trace.getTracer).toBe('function')
  })

  it('adds the span to the trace the application made with it', async () => {
    const api = (await import('@opentelemetry/api')) as typeof import('@opentelemetry/api')
    const { trace, context, ROOT_CONTEXT } = api
    // What an SDK registers: a context manager (synchronous here) and a tracer provider.
    let current = ROOT_CONTEXT
    context.setGlobalContextManager({
      active: () => current,
      with: (ctx, fn, thisArg, ...args) => {
        const before = current
        current = ctx
        try {
          return fn.call(thisArg, ...args)
        } finally {
          current = before
        }
      },
      bind: (_ctx, target) => target,
      enable() {
        return this
      },
      disable() {
        return this
      },
    })
    trace.setGlobalTracerProvider({ getTracer: otel.api.trace.getTracer as never })
    try {
      await start({ otel: undefined })
      await verifier.verify(pk)
      const caller = trace.wrapSpanContext({
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        traceFlags: 1,
      })
      const traced = trace.setSpan(ROOT_CONTEXT, caller)
      // The module is imported in the background: spans come once it has loaded.
      await vi.waitFor(() => {
        context.with(traced, () => verifier.verifyCached(pk))
        expect(otel.spans.length).toBeGreaterThan(0)
      })
      expect(otel.spans[0]?.parent).toBe(traced)
      expect(otel.spans[0]?.options).toMatchObject({
        kind: api.SpanKind.INTERNAL,
        attributes: { 'tessera.outcome': 'valid', 'tessera.cached': true },
      })
    } finally {
      trace.disable()
      context.disable()
    }
  })
})
