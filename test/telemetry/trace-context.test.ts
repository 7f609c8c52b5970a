import { describe, expect, it } from 'vitest'
import {
  formatTraceparent,
  keptTracestate,
  maxTracestate,
  newSpanId,
  newTraceId,
  parseTraceparent,
} from '../../src/telemetry/trace-context.js'

const trace = '4bf92f3577b34da6a3ce929d0e0e4736'
const span = '00f067aa0ba902b7'

describe('W3C Trace Context', () => {
  it('reads a version-00 traceparent: ids and the sampled flag', () => {
    expect(parseTraceparent(`00-${trace}-${span}-01`)).toEqual({
      traceId: trace,
      spanId: span,
      sampled: true,
    })
    expect(parseTraceparent(`00-${trace}-${span}-00`)?.sampled).toBe(false)
    // Other flag bits (level 2's random flag) leave sampled as its own bit says.
    expect(parseTraceparent(`00-${trace}-${span}-02`)?.sampled).toBe(false)
    expect(parseTraceparent(`00-${trace}-${span}-03`)?.sampled).toBe(true)
    expect(formatTraceparent(trace, span, true)).toBe(`00-${trace}-${span}-01`)
    expect(formatTraceparent(trace, span, false)).toBe(`00-${trace}-${span}-00`)
  })

  it('ignores a traceparent that is not valid', () => {
    const bad = [
      undefined,
      '',
      [`00-${trace}-${span}-01`, `00-${trace}-${span}-01`],
      `00-${trace}-${span}-01, 00-${trace}-${span}-01`,
      `00-${'0'.repeat(32)}-${span}-01`,
      `00-${trace}-${'0'.repeat(16)}-01`,
      `00-${trace.toUpperCase()}-${span}-01`,
      `00-${trace}-${span.toUpperCase()}-01`,
      `00-${trace}-${span}-0g`,
      `00-${trace.slice(1)}-${span}-01`,
      `00-${trace}-${span}1-01`,
      `00-${trace}-${span}-01-`,
      `00-${trace}-${span}-01x`,
      `00_${trace}-${span}-01`,
      `00-${trace}_${span}-01`,
      `ff-${trace}-${span}-01`,
      `0g-${trace}-${span}-01`,
      `FF-${trace}-${span}-01`,
      // A later version: what follows the flags must start with a dash.
      `01-${trace}-${span}-01x`,
      `cc-${trace}-${span}-01.what-the-future-will-be-like`,
    ]
    for (const header of bad) expect(parseTraceparent(header), String(header)).toBeUndefined()
  })

  it('reads a later version for its first four fields', () => {
    const expected = { traceId: trace, spanId: span, sampled: true }
    expect(parseTraceparent(`01-${trace}-${span}-01`)).toEqual(expected)
    expect(parseTraceparent(`cc-${trace}-${span}-01-what-the-future-will-be-like`)).toEqual(
      expected,
    )
  })

  it('keeps a tracestate unchanged, up to its bound, printable', () => {
    expect(keptTracestate('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')).toBe(
      'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    )
    expect(keptTracestate(['rojo=1', 'congo=2'])).toBe('rojo=1,congo=2')
    expect(keptTracestate('a=b, c=d')).toBe('a=b, c=d')
    const longest = `k=${'v'.repeat(maxTracestate - 2)}`
    expect(keptTracestate(longest)).toBe(longest)
    expect(keptTracestate(`${longest}v`)).toBeUndefined()
    expect(keptTracestate('a=b\u00e9')).toBeUndefined()
    expect(keptTracestate('')).toBeUndefined()
    expect(keptTracestate(undefined)).toBeUndefined()
  })

  it('makes random ids of 16 and 8 bytes, never repeated, across refills of the pool', () => {
    const traces = new Set<string>()
    const spans = new Set<string>()
    // 4096 bytes a pool: 700 of each spans four refills.
    for (let i = 0; i < 700; i++) {
      traces.add(newTraceId())
      spans.add(newSpanId())
    }
    expect(traces.size).toBe(700)
    expect(spans.size).toBe(700)
    for (const id of traces) expect(id).toMatch(/^[0-9a-f]{32}$/)
    for (const id of spans) expect(id).toMatch(/^[0-9a-f]{16}$/)
    // Each made id is one a traceparent carries.
    const parsed = parseTraceparent(formatTraceparent(newTraceId(), newSpanId(), true))
    expect(parsed).toBeDefined()
  })
})
