import { describe, expect, it } from 'vitest'
import { encode } from '../../src/telemetry/codec.js'
import { keyValues, logsRequest, metricsRequest } from '../../src/telemetry/schema.js'
import { decodeMessage, tables } from './protobuf-decode.js'

const both = (schema: typeof logsRequest, table: typeof tables.logs, request: object) => {
  const json = JSON.parse(encode('http/json', schema, request as never).body.toString())
  const proto = decodeMessage(encode('http/protobuf', schema, request as never).body, table)
  return { json, proto }
}

const logs = (attributes: ReturnType<typeof keyValues>) => ({
  resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: 1n, attributes }] }] }],
})

describe('the OTLP encodings', () => {
  it("writes a oneof's zero values, and reads them back alike from both encodings", () => {
    const attributes = keyValues([
      ['zero', 0],
      ['no', false],
      ['empty', ''],
      ['negative', -3],
      ['half', 0.5],
      ['big', 2 ** 53 - 1],
    ])
    const { json, proto } = both(logsRequest, tables.logs, logs(attributes))
    const expected = [
      { key: 'zero', value: { intValue: '0' } },
      { key: 'no', value: { boolValue: false } },
      { key: 'empty', value: { stringValue: '' } },
      { key: 'negative', value: { intValue: '-3' } },
      { key: 'half', value: { doubleValue: 0.5 } },
      { key: 'big', value: { intValue: '9007199254740991' } },
    ]
    expect(json.resourceLogs[0].scopeLogs[0].logRecords[0].attributes).toEqual(expected)
    expect(proto).toEqual(json)
  })

  it('writes 64-bit integers as decimal strings and doubles that are not finite as names in JSON', () => {
    const point = (asDouble: number) => ({ timeUnixNano: 2n ** 63n, asDouble })
    const request = {
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                { name: 'g', gauge: { dataPoints: [point(Number.NaN), point(-Infinity)] } },
              ],
            },
          ],
        },
      ],
    }
    const json = JSON.parse(encode('http/json', metricsRequest, request).body.toString())
    expect(json.resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints).toEqual([
      { timeUnixNano: '9223372036854775808', asDouble: 'NaN' },
      { timeUnixNano: '9223372036854775808', asDouble: '-Infinity' },
    ])
    const proto = decodeMessage(
      encode('http/protobuf', metricsRequest, request).body,
      tables.metrics,
    )
    const points = (proto as never as typeof json).resourceMetrics[0].scopeMetrics[0].metrics[0]
      .gauge.dataPoints
    expect(points[0].timeUnixNano).toBe('9223372036854775808')
    expect(points[0].asDouble).toBeNaN()
    expect(points[1].asDouble).toBe(-Infinity)
  })

  it('leaves out what is not given and empty lists, in both encodings', () => {
    const { json, proto } = both(logsRequest, tables.logs, logs([]))
    expect(json).toEqual({
      resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: '1' }] }] }],
    })
    expect(proto).toEqual(json)
  })
})
