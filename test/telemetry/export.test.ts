import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { generateSelfSigned } from '../../src/tls/self-signed.js'
import { oneSpan, tracesTo } from './helpers.js'
import { otlpReceiver, type Receiver } from './receiver.js'

const version = JSON.parse(readFileSync('package.json', 'utf8')).version as string

let receiver: Receiver
beforeEach(async () => {
  receiver = await otlpReceiver()
})
afterEach(() => receiver.close())

/** A receiver's address with nothing listening on it any more. */
async function closedAddress(): Promise<string> {
  const gone = await otlpReceiver()
  await gone.close()
  return gone.url
}

describe('the export of spans', () => {
  it('sends the headers of OTEL_EXPORTER_OTLP_HEADERS with every request', async () => {
    const telemetry = await tracesTo(receiver, {
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20k%3D1,x-tenant=acme',
    })
    oneSpan(telemetry)
    const [request] = await receiver.waitFor('/v1/traces')
    expect(request?.method).toBe('POST')
    expect(request?.headers.authorization).toBe('Bearer k=1')
    expect(request?.headers['x-tenant']).toBe('acme')
    expect(request?.headers['user-agent']).toBe(`tessera/${version}`)
    expect(request?.headers['content-length']).toBe(String(request?.body.length))
    await telemetry.shutdown()
  })

  it('uses a per-signal endpoint as it is, path and all', async () => {
    receiver.signalOf.set('/collector/spans', 'traces')
    const telemetry = await tracesTo(receiver, {
      OTEL_EXPORTER_OTLP_ENDPOINT: await closedAddress(),
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/collector/spans`,
    })
    oneSpan(telemetry)
    await telemetry.shutdown()
    expect(receiver.received.map((r) => r.path)).toEqual(['/collector/spans'])
    expect(receiver.spans()).toHaveLength(1)
    expect(telemetry.counters.spans.exported).toBe(1)
  })

  it('exports on schedule without being asked', async () => {
    const telemetry = await tracesTo(receiver, { OTEL_BSP_SCHEDULE_DELAY: '20' })
    oneSpan(telemetry)
    oneSpan(telemetry)
    const [request] = await receiver.waitFor('/v1/traces')
    expect(request?.decoded.resourceSpans[0].scopeSpans[0].spans).toHaveLength(2)
    await telemetry.shutdown()
  })

  it('drops the spans past the queue bound and counts exactly those', async () => {
    // One export in flight (the receiver slow), one batch waiting: the queue's five places.
    receiver.delayMs = 150
    const telemetry = await tracesTo(receiver, {
      OTEL_BSP_MAX_QUEUE_SIZE: '5',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '5',
      OTEL_BSP_SCHEDULE_DELAY: '60000',
    })
    for (let i = 0; i < 5; i++) oneSpan(telemetry)
    // The first five are in flight; five more fill the queue; three have no place.
    for (let i = 0; i < 8; i++) oneSpan(telemetry)
    expect(telemetry.counters.spans.dropped).toBe(3)
    await telemetry.shutdown()
    expect(receiver.spans()).toHaveLength(10)
    expect(
      receiver.received.map((r) => r.decoded.resourceSpans[0].scopeSpans[0].spans.length),
    ).toEqual([5, 5])
    expect(telemetry.counters.spans).toEqual({
      exported: 10,
      dropped: 3,
      failedExports: 0,
      failedItems: 0,
    })
  })

  it('sends batches of OTEL_BSP_MAX_EXPORT_BATCH_SIZE, one at a time', async () => {
    receiver.delayMs = 20
    const telemetry = await tracesTo(receiver, {
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4',
      OTEL_BSP_SCHEDULE_DELAY: '60000',
    })
    for (let i = 0; i < 10; i++) oneSpan(telemetry)
    await telemetry.shutdown()
    expect(
      receiver.received.map((r) => r.decoded.resourceSpans[0].scopeSpans[0].spans.length),
    ).toEqual([4, 4, 2])
    expect(telemetry.counters.spans.exported).toBe(10)
  })

  it('counts a failure and goes on when the receiver is down, and says so once', async () => {
    const warnings: [object, string][] = []
    const log = { warn: (details: object, message: string) => warnings.push([details, message]) }
    const telemetry = await tracesTo(
      receiver,
      { OTEL_EXPORTER_OTLP_ENDPOINT: await closedAddress(), OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2' },
      { log },
    )
    for (let i = 0; i < 5; i++) expect(() => oneSpan(telemetry)).not.toThrow()
    await expect(telemetry.shutdown()).resolves.toBeUndefined()
    expect(telemetry.counters.spans).toEqual({
      exported: 0,
      dropped: 0,
      failedExports: 3,
      failedItems: 5,
    })
    // Three failures within the minute: one line.
    expect(warnings).toEqual([
      [
        { signal: 'traces', reason: expect.stringContaining('ECONNREFUSED') },
        'OpenTelemetry export failed',
      ],
    ])
  })

  it('counts a refusal (an answer not 2xx) as a failure', async () => {
    receiver.status = 503
    const telemetry = await tracesTo(receiver)
    oneSpan(telemetry)
    await telemetry.shutdown()
    expect(receiver.received).toHaveLength(1)
    expect(telemetry.counters.spans).toEqual({
      exported: 0,
      dropped: 0,
      failedExports: 1,
      failedItems: 1,
    })
  })

  it('gives up on a receiver that does not answer within OTEL_EXPORTER_OTLP_TIMEOUT', async () => {
    receiver.delayMs = 2000
    const telemetry = await tracesTo(receiver, { OTEL_EXPORTER_OTLP_TIMEOUT: '100' })
    oneSpan(telemetry)
    const started = performance.now()
    await telemetry.shutdown()
    expect(performance.now() - started).toBeLessThan(1500)
    expect(telemetry.counters.spans.failedExports).toBe(1)
  })

  it('flushes the queue on shutdown, and takes no span after it', async () => {
    const telemetry = await tracesTo(receiver, { OTEL_BSP_SCHEDULE_DELAY: '60000' })
    for (let i = 0; i < 3; i++) oneSpan(telemetry)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(receiver.received).toHaveLength(0)
    await telemetry.shutdown()
    expect(receiver.spans()).toHaveLength(3)
    oneSpan(telemetry)
    expect(telemetry.counters.spans).toEqual({
      exported: 3,
      dropped: 1,
      failedExports: 0,
      failedItems: 0,
    })
  })

  it('gives a shutdown at most its deadline, and counts what it could not send as dropped', async () => {
    receiver.delayMs = 2000
    const telemetry = await tracesTo(receiver, {
      OTEL_BSP_SCHEDULE_DELAY: '60000',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2',
    })
    for (let i = 0; i < 5; i++) oneSpan(telemetry)
    const started = performance.now()
    await telemetry.shutdown(200)
    expect(performance.now() - started).toBeLessThan(1000)
    // Two in flight when the deadline came; one more batch of two waiting, and one span.
    expect(telemetry.counters.spans.dropped).toBe(3)
  })

  it('sends over HTTPS, trusting the authorities of OTEL_EXPORTER_OTLP_CERTIFICATE', async () => {
    const tls = generateSelfSigned()
    const secure = await otlpReceiver(tls)
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-otlp-'))
    try {
      const ca = path.join(dir, 'ca.pem')
      writeFileSync(ca, tls.cert)
      const trusting = await tracesTo(secure, { OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: ca })
      oneSpan(trusting)
      await trusting.shutdown()
      expect(secure.url).toMatch(/^https:/)
      expect(secure.spans()).toHaveLength(1)
      expect(trusting.counters.spans.exported).toBe(1)
      // Without it, the self-signed certificate is refused: a failure, counted.
      const doubting = await tracesTo(secure)
      oneSpan(doubting)
      await doubting.shutdown()
      expect(doubting.counters.spans.failedExports).toBe(1)
      expect(secure.spans()).toHaveLength(1)
      await expect(
        tracesTo(secure, { OTEL_EXPORTER_OTLP_CERTIFICATE: path.join(dir, 'none.pem') }),
      ).rejects.toThrow(
        new Error(
          `OTEL_EXPORTER_OTLP_CERTIFICATE cannot be read: ${path.join(dir, 'none.pem')}: no such file or directory`,
        ),
      )
    } finally {
      await secure.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
