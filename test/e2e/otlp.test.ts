import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'
import { attributesOf, type Otlp, otlpReceiver, type Receiver } from '../telemetry/receiver.js'
import { type Started, startTessera } from './spawned.js'

/**
 * The server with OTEL_EXPORTER_OTLP_ENDPOINT set, against a local OTLP/HTTP receiver
 * (docs/telemetry.md): a span per request, ahead of Fastify and through it, continuing the
 * caller's traceparent, with what its verification came to; its metrics; and the verification
 * log's rows as log records, the valid ones too while the database keeps refusals only.
 */

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
let dir: string
let server: Started
let receiver: Receiver
let pk: { id: string; token: string }
let sk: { id: string; token: string }

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'tessera-otlp-'))
  receiver = await otlpReceiver()
  const cli = async (...args: string[]) =>
    JSON.parse(
      (
        await run(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], {
          env: childEnv({ DATA_DIR: dir, LOG_LEVEL: 'warn' }),
          cwd: dir,
        })
      ).stdout,
    )
  await cli('account', 'create', 'acme')
  pk = await cli('token', 'create', 'acme', '--scopes', 'styles:read', '--note', 'pk')
  sk = await cli('token', 'create', 'acme', '--scopes', 'tokens:read', '--note', 'sk')
  server = await startTessera(dir, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_SERVICE_NAME: 'tessera-e2e',
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_BLRP_SCHEDULE_DELAY: '50',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
  })
})

afterAll(async () => {
  server?.child.kill('SIGKILL')
  await receiver?.close()
  rmSync(dir, { recursive: true, force: true })
})

function get(route: string, headers: Record<string, string> = {}) {
  return new Promise<number>((resolve, reject) => {
    const req = request(`${server.url}${route}`, { headers, ca: server.ca }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

const caller = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
}

/** The spans received so far whose trace is `traceId`. */
const spansOf = (traceId: string): Otlp[] =>
  receiver.spans().filter((s: Otlp) => s.traceId === traceId)

async function until<T>(read: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const value = read()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error('not received within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('OpenTelemetry over OTLP/HTTP', () => {
  it('a span per request, continuing the caller’s trace, with its verification', async () => {
    const traceparent = `00-${caller.traceId}-${caller.spanId}-01`
    // Retrieve: ahead of Fastify once the token is cached (the first goes through Fastify).
    expect(await get(`/tokens/v2?access_token=${pk.token}`, { traceparent })).toBe(200)
    expect(await get(`/tokens/v2?access_token=${pk.token}`, { traceparent })).toBe(200)
    // The token API, through Fastify's hooks.
    expect(await get('/tokens/v2/acme', { traceparent, authorization: `Bearer ${sk.token}` })).toBe(
      200,
    )
    const spans = await until(() => {
      const s = spansOf(caller.traceId)
      return s.length >= 3 ? s : undefined
    })
    expect(spans).toHaveLength(3)
    for (const span of spans) {
      expect(span.parentSpanId).toBe(caller.spanId)
      expect(span.kind).toBe(2)
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/)
    }
    const [first, second, api] = spans.map((s: Otlp) => ({
      name: s.name,
      ...attributesOf(s.attributes),
    }))
    const retrieve = {
      name: 'GET /tokens/v2',
      'http.request.method': 'GET',
      'http.route': '/tokens/v2',
      'url.scheme': 'https',
      'client.address': '127.0.0.1',
      'http.response.status_code': '200',
      'tessera.outcome': 'valid',
      'tessera.account': 'acme',
      'tessera.token_id': pk.id,
      'tessera.source': 'retrieve',
    }
    expect(first).toMatchObject(retrieve)
    expect(second).toMatchObject(retrieve)
    expect(api).toMatchObject({
      name: 'GET /tokens/v2/:username',
      'http.route': '/tokens/v2/:username',
      'tessera.outcome': 'valid',
      'tessera.token_id': sk.id,
      'tessera.source': 'api',
    })
    // No token string, query string or Authorization value anywhere in what was sent.
    const sent = receiver.received.map((r) => r.body.toString('latin1')).join('')
    expect(sent.includes(pk.token)).toBe(false)
    expect(sent.includes(sk.token)).toBe(false)
    expect(sent.includes('access_token')).toBe(false)
  })

  it('a new trace without a traceparent, or with a bad one', async () => {
    const before = new Set(receiver.spans().map((s: Otlp) => s.spanId))
    expect(await get('/tokens/v2?access_token=nope', { traceparent: '00-zz-zz-01' })).toBe(200)
    const span = await until(() =>
      receiver.spans().find((s: Otlp) => !before.has(s.spanId) && s.name === 'GET /tokens/v2'),
    )
    expect(span.parentSpanId ?? '').toBe('')
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(attributesOf(span.attributes)).toMatchObject({
      'tessera.outcome': 'malformed',
      'tessera.account': '',
      'tessera.source': 'retrieve',
    })
  })

  it('its metrics, with the service’s resource', async () => {
    const names = await until(() => {
      const all = receiver.received
        .filter((r) => r.path === '/v1/metrics')
        .flatMap((r) => r.decoded.resourceMetrics)
      const found = all.flatMap((rm: Otlp) =>
        rm.scopeMetrics.flatMap((sm: Otlp) => sm.metrics.map((m: Otlp) => m.name)),
      )
      return found.includes('tessera_http_requests_total') ? { all, found } : undefined
    })
    expect(names.found).toContain('tessera_validations_total')
    expect(names.found).toContain('tessera_verification_log_rows_total')
    expect(names.found).toContain('tessera_otel_items_total')
    expect(attributesOf(names.all[0].resource.attributes)).toMatchObject({
      'service.name': 'tessera-e2e',
    })
  })

  it('the verification log’s rows as log records: every one, while the database keeps refusals', async () => {
    const records = await until(() => {
      const r = receiver.logRecords()
      return r.length >= 4 ? r : undefined
    })
    const rows = records.map((r: Otlp) => attributesOf(r.attributes))
    expect(rows.map((r) => [r['tessera.source'], r['tessera.outcome']])).toEqual([
      ['retrieve', 'valid'],
      ['retrieve', 'valid'],
      ['api', 'valid'],
      ['retrieve', 'malformed'],
    ])
    expect(records.map((r: Otlp) => r.severityText)).toEqual(['INFO', 'INFO', 'INFO', 'WARN'])
  })
})
