import { readFileSync } from 'node:fs'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { nanoClock } from '../../src/telemetry/clock.js'
import type { SpanStart } from '../../src/telemetry/tracer.js'
import { oneSpan, retrieveStart, startNs, tracesTo } from './helpers.js'
import { attributesOf, type Otlp, otlpReceiver, type Received, type Receiver } from './receiver.js'

const version = JSON.parse(readFileSync('package.json', 'utf8')).version as string
const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736'
const callerSpan = '00f067aa0ba902b7'

let receiver: Receiver
beforeEach(async () => {
  receiver = await otlpReceiver()
})
afterEach(() => receiver.close())

const retrieveAttributes = [
  { key: 'http.request.method', value: { stringValue: 'GET' } },
  { key: 'http.route', value: { stringValue: '/tokens/v2' } },
  { key: 'url.scheme', value: { stringValue: 'https' } },
  { key: 'client.address', value: { stringValue: '203.0.113.7' } },
  { key: 'server.port', value: { intValue: '8443' } },
  { key: 'http.response.status_code', value: { intValue: '200' } },
  { key: 'tessera.outcome', value: { stringValue: 'valid' } },
  { key: 'tessera.account', value: { stringValue: 'acme' } },
  { key: 'tessera.token_id', value: { stringValue: 'cl0k3n1d' } },
  { key: 'tessera.source', value: { stringValue: 'retrieve' } },
]

describe('the spans Tessera sends', () => {
  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    it(`sends a server span per request with its attributes, over ${protocol}`, async () => {
      const telemetry = await tracesTo(receiver, { OTEL_EXPORTER_OTLP_PROTOCOL: protocol })
      oneSpan(telemetry)
      const [request] = await receiver.waitFor('/v1/traces')
      expect(request?.protocol).toBe(protocol === 'http/json' ? 'json' : 'protobuf')
      expect(request?.headers['content-type']).toBe(
        protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
      )
      const [resourceSpans] = (request as Received).decoded.resourceSpans
      const resource = attributesOf(resourceSpans.resource.attributes)
      expect(resource).toEqual({
        'service.name': 'tessera',
        'service.version': version,
        'service.instance.id': expect.stringMatching(/^[0-9a-f-]{36}$/),
        'telemetry.sdk.name': 'tessera',
        'telemetry.sdk.language': 'nodejs',
        'telemetry.sdk.version': version,
      })
      expect(resourceSpans.scopeSpans[0].scope).toEqual({ name: 'tessera', version })
      expect(receiver.spans()).toEqual([
        {
          traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
          spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
          name: 'GET /tokens/v2',
          kind: 2,
          startTimeUnixNano: '1700000000000000000',
          endTimeUnixNano: '1700000000001500000',
          attributes: retrieveAttributes,
          // Sampled; whether the parent is remote is known (bit 8), and it is not (bit 9).
          flags: 0x101,
        },
      ])
      await telemetry.shutdown()
      expect(telemetry.counters.spans).toEqual({
        exported: 1,
        dropped: 0,
        failedExports: 0,
        failedItems: 0,
      })
    })
  }

  it("continues the caller's trace: its trace id, its span as parent, its flag and tracestate", async () => {
    const telemetry = await tracesTo(receiver)
    const start = retrieveStart({
      traceparent: `00-${callerTrace}-${callerSpan}-01`,
      tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    })
    const span = oneSpan(telemetry, start)
    await telemetry.shutdown()
    const [sent] = receiver.spans()
    expect(sent.traceId).toBe(callerTrace)
    expect(sent.parentSpanId).toBe(callerSpan)
    expect(sent.spanId).toBe(span?.spanId)
    expect(sent.spanId).not.toBe(callerSpan)
    expect(sent.traceState).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')
    expect(sent.flags).toBe(0x301)
  })

  it("follows the caller's decision not to sample, unless the sampler ignores parents", async () => {
    const unsampled = retrieveStart({ traceparent: `00-${callerTrace}-${callerSpan}-00` })
    const parentBased = await tracesTo(receiver)
    expect(oneSpan(parentBased, unsampled)).toBeUndefined()
    await parentBased.shutdown()
    expect(receiver.received).toEqual([])

    const alwaysOn = await tracesTo(receiver, { OTEL_TRACES_SAMPLER: 'always_on' })
    oneSpan(alwaysOn, unsampled)
    await alwaysOn.shutdown()
    expect(receiver.spans().map((s: Otlp) => [s.traceId, s.parentSpanId])).toEqual([
      [callerTrace, callerSpan],
    ])
  })

  it('starts a new trace without a traceparent, or with one that is not valid', async () => {
    const telemetry = await tracesTo(receiver)
    const starts: SpanStart[] = [
      retrieveStart(),
      retrieveStart({ tracestate: 'orphan=1' }),
      retrieveStart({ traceparent: `00-${callerTrace.toUpperCase()}-${callerSpan}-01` }),
      retrieveStart({ traceparent: `00-${'0'.repeat(32)}-${callerSpan}-01`, tracestate: 'a=1' }),
      retrieveStart({ traceparent: 'garbage' }),
    ]
    for (const start of starts) oneSpan(telemetry, start)
    await telemetry.shutdown()
    const spans = receiver.spans()
    expect(spans).toHaveLength(5)
    expect(new Set(spans.map((s: Otlp) => s.traceId)).size).toBe(5)
    for (const span of spans) {
      expect(span.traceId).not.toBe(callerTrace)
      // No parent, and no tracestate: one comes only with a valid traceparent.
      expect(span.parentSpanId ?? '').toBe('')
      expect(span.traceState ?? '').toBe('')
      expect(span.flags).toBe(0x101)
    }
  })

  it('sends nothing with the always_off sampler', async () => {
    const telemetry = await tracesTo(receiver, { OTEL_TRACES_SAMPLER: 'always_off' })
    expect(oneSpan(telemetry)).toBeUndefined()
    const caller = retrieveStart({ traceparent: `00-${callerTrace}-${callerSpan}-01` })
    expect(oneSpan(telemetry, caller)).toBeUndefined()
    await telemetry.shutdown()
    expect(receiver.received).toEqual([])
    expect(telemetry.counters.spans.exported).toBe(0)
  })

  it("samples by ratio on the trace id's last 56 bits", async () => {
    const telemetry = await tracesTo(receiver, {
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
    })
    const id = (last14: string) => `00-${'a'.repeat(18)}${last14}-${callerSpan}-01`
    // Under half of 2^56: sampled; at or over it: not, whatever the caller's flag says.
    const low = retrieveStart({ traceparent: id('7fffffffffff00') })
    const high = retrieveStart({ traceparent: id('80000000000000') })
    expect(oneSpan(telemetry, low)).toBeDefined()
    expect(oneSpan(telemetry, high)).toBeUndefined()
    await telemetry.shutdown()
    expect(receiver.spans()).toHaveLength(1)
  })

  it('marks a span ERROR when answered 5xx, not 4xx', async () => {
    const telemetry = await tracesTo(receiver)
    oneSpan(telemetry, retrieveStart(), 503)
    oneSpan(telemetry, retrieveStart(), 401)
    await telemetry.shutdown()
    const [failed, refused] = receiver.spans()
    expect(failed.status).toEqual({ code: 2 })
    expect(attributesOf(failed.attributes)['error.type']).toBe('503')
    expect(attributesOf(failed.attributes)['http.response.status_code']).toBe('503')
    expect(refused.status).toBeUndefined()
    expect(attributesOf(refused.attributes)['error.type']).toBeUndefined()
  })

  it('names a request no route matched by its method, and an unknown method _OTHER', async () => {
    const telemetry = await tracesTo(receiver)
    const tracer = telemetry.tracer
    const unmatched = tracer?.startSpan({ startNs, attributes: { method: 'GET', scheme: 'http' } })
    tracer?.end(unmatched, startNs, {}, 404)
    const odd = { method: 'PURGE', route: '/tokens/v2', scheme: 'http' as const }
    tracer?.end(tracer?.startSpan({ startNs, attributes: odd }), startNs, {}, 405)
    await telemetry.shutdown()
    const [first, second] = receiver.spans()
    expect(first.name).toBe('GET')
    expect(attributesOf(first.attributes)).toEqual({
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'http.response.status_code': '404',
    })
    expect(second.name).toBe('HTTP /tokens/v2')
    expect(attributesOf(second.attributes)['http.request.method']).toBe('_OTHER')
    expect(attributesOf(second.attributes)['http.request.method_original']).toBe('PURGE')
  })

  it('never sends a token, a query string or an Authorization value', async () => {
    const telemetry = await tracesTo(receiver, { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })
    const start = retrieveStart()
    // What a careless caller might pass along: only the attributes the tracer knows are kept.
    const careless = {
      ...start.attributes,
      url: '/tokens/v2?access_token=pk.secret-token-string',
      authorization: 'Bearer sk.secret-authorization',
      query: 'access_token=pk.secret-query',
    }
    oneSpan(telemetry, { ...start, attributes: careless })
    await telemetry.shutdown()
    const body = receiver.received.map((r) => r.body.toString()).join('')
    expect(body).toContain('GET /tokens/v2')
    expect(body).not.toMatch(/secret|access_token|Bearer|\?/)
  })

  it('ends a span once, and never before it started', async () => {
    const telemetry = await tracesTo(receiver)
    const tracer = telemetry.tracer
    const span = tracer?.startSpan(retrieveStart())
    tracer?.end(span, startNs - 5n, {}, 200)
    tracer?.end(span, startNs + 5n, {}, 500)
    await telemetry.shutdown()
    const [only] = receiver.spans()
    expect(receiver.spans()).toHaveLength(1)
    expect(only.endTimeUnixNano).toBe(only.startTimeUnixNano)
    expect(only.status).toBeUndefined()
  })
})

describe('the clock of spans', () => {
  it('adds the monotonic clock to the service clock, and reads the service clock again each minute', () => {
    let wall = 1_700_000_000_000
    let perf = 1000.25
    const clock = nanoClock(
      () => wall,
      () => perf,
    )
    expect(clock()).toBe(1_700_000_000_000_000_000n)
    expect(clock(1000.25 + 0.001234)).toBe(1_700_000_000_000_001_234n)
    // A reading taken before the anchor (a request's start): before it, exactly.
    expect(clock(999.25)).toBe(1_699_999_999_999_000_000n)
    // The wall clock moved by 5 ms more than the monotonic one: seen after a minute, not before.
    wall += 30_005
    perf += 30_000
    expect(clock()).toBe(1_700_000_030_000_000_000n)
    wall += 30_005
    perf += 30_000
    expect(clock()).toBe(1_700_000_060_010_000_000n)
  })
})
