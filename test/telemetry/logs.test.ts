import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Telemetry, telemetryOf, type VerificationRow } from '../../src/telemetry/index.js'
import { nowMs } from './helpers.js'
import { otlpReceiver, type Receiver } from './receiver.js'

let receiver: Receiver
beforeEach(async () => {
  receiver = await otlpReceiver()
})
afterEach(() => receiver.close())

async function logsTo(env: Record<string, string> = {}): Promise<Telemetry> {
  const telemetry = await telemetryOf(
    { OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${receiver.url}/v1/logs`, ...env },
    { now: () => nowMs + 60_000 },
  )
  if (telemetry === undefined) throw new Error('telemetry off')
  return telemetry
}

const valid: VerificationRow = {
  at: nowMs + 1234,
  account: 'acme',
  tokenId: 'cl0k3n1d',
  source: 'retrieve',
  outcome: 'valid',
  limit: null,
  ip: '203.0.113.7',
  origin: 'maps.acme.example',
  requestId: 'req-1',
  durationUs: 87,
}

const limited: VerificationRow = {
  at: nowMs + 2000,
  account: 'acme',
  tokenId: 'cl0k3n1d',
  source: 'api',
  outcome: 'rate_limited',
  limit: 'per-ip',
  ip: null,
  origin: null,
  requestId: null,
  durationUs: null,
}

const s = (stringValue: string) => ({ stringValue })

describe('the verification log as OTLP log records', () => {
  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    it(`sends a record per row, WARN for a refusal, over ${protocol}`, async () => {
      const telemetry = await logsTo({ OTEL_EXPORTER_OTLP_PROTOCOL: protocol })
      expect(telemetry.tracer).toBeUndefined()
      telemetry.exportLogs([valid, limited])
      await telemetry.shutdown()
      const observedTimeUnixNano = '1700000060000000000'
      expect(receiver.logRecords()).toEqual([
        {
          timeUnixNano: '1700000001234000000',
          observedTimeUnixNano,
          severityNumber: 9,
          severityText: 'INFO',
          body: s('verification'),
          attributes: [
            { key: 'tessera.account', value: s('acme') },
            { key: 'tessera.token_id', value: s('cl0k3n1d') },
            { key: 'tessera.source', value: s('retrieve') },
            { key: 'tessera.outcome', value: s('valid') },
            { key: 'client.address', value: s('203.0.113.7') },
            { key: 'tessera.origin', value: s('maps.acme.example') },
            { key: 'tessera.request_id', value: s('req-1') },
            { key: 'tessera.duration_us', value: { intValue: '87' } },
          ],
        },
        {
          timeUnixNano: '1700000002000000000',
          observedTimeUnixNano,
          severityNumber: 13,
          severityText: 'WARN',
          body: s('verification'),
          attributes: [
            { key: 'tessera.account', value: s('acme') },
            { key: 'tessera.token_id', value: s('cl0k3n1d') },
            { key: 'tessera.source', value: s('api') },
            { key: 'tessera.outcome', value: s('rate_limited') },
            { key: 'tessera.limit', value: s('per-ip') },
          ],
        },
      ])
      expect(telemetry.counters.logs).toEqual({
        exported: 2,
        dropped: 0,
        failedExports: 0,
        failedItems: 0,
      })
      const [request] = receiver.received
      const [resourceLogs] = request?.decoded.resourceLogs ?? []
      expect(resourceLogs.scopeLogs[0].scope.name).toBe('tessera')
    })
  }

  it('drops the rows past OTEL_BLRP_MAX_QUEUE_SIZE and counts exactly those', async () => {
    const telemetry = await logsTo({
      OTEL_BLRP_MAX_QUEUE_SIZE: '100',
      OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: '100',
      OTEL_BLRP_SCHEDULE_DELAY: '60000',
    })
    receiver.delayMs = 100
    // 100 go out at once (a full batch), 100 wait, 37 have no place.
    telemetry.exportLogs(Array.from({ length: 237 }, (_, i) => ({ ...valid, durationUs: i })))
    expect(telemetry.counters.logs.dropped).toBe(37)
    await telemetry.shutdown()
    const records = receiver.logRecords()
    expect(records).toHaveLength(200)
    const durations = records.map(
      (r: { attributes: { key: string; value: { intValue: string } }[] }) =>
        Number(r.attributes.find((a) => a.key === 'tessera.duration_us')?.value.intValue),
    )
    expect(durations).toEqual(Array.from({ length: 200 }, (_, i) => i))
    expect(telemetry.counters.logs.exported).toBe(200)
  })

  it('sends nothing and counts nothing when logs are not exported', async () => {
    const telemetry = await telemetryOf(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_LOGS_EXPORTER: 'none' },
      { now: () => nowMs },
    )
    telemetry?.exportLogs([valid])
    await telemetry?.shutdown()
    expect(receiver.received.filter((r) => r.path === '/v1/logs')).toEqual([])
    expect(telemetry?.counters.logs.dropped).toBe(0)
  })
})
