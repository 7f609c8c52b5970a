import { describe, expect, it } from 'vitest'
import { ProtoWriter } from '../../src/telemetry/protobuf.js'
import { rawFields } from './protobuf-decode.js'

describe('the protobuf writer', () => {
  it('writes varints at their byte boundaries, and int64s below zero in ten bytes', () => {
    const cases: [number | bigint, string][] = [
      [0, '00'],
      [1, '01'],
      [127, '7f'],
      [128, '8001'],
      [300, 'ac02'],
      [16_383, 'ff7f'],
      [16_384, '808001'],
      [2 ** 32, '8080808010'],
      [Number.MAX_SAFE_INTEGER, 'ffffffffffffff0f'],
      [-1, 'ffffffffffffffffff01'],
      [2n ** 64n - 1n, 'ffffffffffffffffff01'],
    ]
    for (const [value, hex] of cases) {
      expect(new ProtoWriter().varint(value).finish().toString('hex'), String(value)).toBe(hex)
    }
  })

  it('writes tags, fixed-width numbers and strings as a decoder reads them', () => {
    const w = new ProtoWriter()
    w.tag(1, 0).varint(150)
    w.tag(7, 1).fixed64(1_700_000_000_123_456_789n)
    w.tag(16, 5).fixed32(0x301)
    w.tag(4, 1).double(0.25)
    w.tag(5, 2).string('GET /tokens/v2 é')
    w.tag(2, 2).bytes(Buffer.from('00f067aa0ba902b7', 'hex'))
    const fields = rawFields(w.finish())
    const at = (i: number) => fields[i]?.value as Buffer
    expect(fields.map((f) => [f.field, f.wire])).toEqual([
      [1, 0],
      [7, 1],
      [16, 5],
      [4, 1],
      [5, 2],
      [2, 2],
    ])
    expect(fields[0]?.value).toBe(150n)
    expect(at(1).readBigUInt64LE(0)).toBe(1_700_000_000_123_456_789n)
    expect(at(2).readUInt32LE(0)).toBe(0x301)
    expect(at(3).readDoubleLE(0)).toBe(0.25)
    expect(at(4).toString()).toBe('GET /tokens/v2 é')
    expect(at(5).toString('hex')).toBe('00f067aa0ba902b7')
  })

  it('puts the length of a nested message in front of it, whatever its size', () => {
    // 127 and 128 bytes: one and two bytes of length; 16,384: three; and a buffer grown past its
    // first kilobyte while nested messages were being written.
    for (const size of [0, 1, 127, 128, 16_383, 16_384, 70_000]) {
      const w = new ProtoWriter()
      w.tag(3, 0).varint(9)
      w.tag(2, 2).nested((n) => {
        n.tag(1, 2).nested((inner) => {
          if (size > 0) inner.tag(1, 2).string('x'.repeat(size))
        })
        n.tag(2, 0).varint(1)
      })
      w.tag(4, 0).varint(5)
      const [first, outer, last] = rawFields(w.finish())
      expect(first).toEqual({ field: 3, wire: 0, value: 9n })
      expect(last).toEqual({ field: 4, wire: 0, value: 5n })
      const [inner, after] = rawFields(outer?.value as Buffer)
      expect(after).toEqual({ field: 2, wire: 0, value: 1n })
      const strings = rawFields(inner?.value as Buffer)
      expect(strings.map((s) => (s.value as Buffer).length)).toEqual(size > 0 ? [size] : [])
    }
  })
})
