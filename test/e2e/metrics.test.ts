import { readFileSync } from 'node:fs'
import { request } from 'node:https'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parsePrometheus } from '../prometheus.js'
import { type ServerProcess, startServer, tessera } from './server.js'

/**
 * The real server with METRICS_PORT=0: Prometheus text over plain HTTP on a listener of its own
 * (127.0.0.1, a port apart from the API's), counting the API requests made over TLS.
 */

let server: ServerProcess
let metricsUrl: URL
let ca: Buffer
beforeAll(async () => {
  server = await startServer({ METRICS_PORT: '0', RATE_LIMIT_PER_MINUTE: '1000' })
  const line = /Prometheus metrics: (\S+)/.exec(server.output())
  metricsUrl = new URL(line?.[1] ?? 'http://missing')
  ca = readFileSync(server.certFile)
})
afterAll(() => server.stop())

function api(route: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${server.url}${route}`, { ca }, (res) => {
      let body = ''
      res.on('data', (d) => {
        body += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function scrape() {
  const res = await fetch(metricsUrl)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  return parsePrometheus(await res.text())
}

describe('the metrics listener', () => {
  it('is plain HTTP on 127.0.0.1, on a port apart from the API', () => {
    expect(server.output()).toMatch(/^Prometheus metrics: http:\/\/127\.0\.0\.1:\d+\/metrics$/m)
    expect(metricsUrl.protocol).toBe('http:')
    expect(metricsUrl.hostname).toBe('127.0.0.1')
    expect(metricsUrl.port).not.toBe(new URL(server.url).port)
  })

  it('counts the API requests made, by route and status, and their validations', async () => {
    await tessera(server.env, 'account', 'create', 'scraped')
    const { token } = await tessera(
      server.env,
      'token',
      'create',
      'scraped',
      '--scopes',
      'styles:read',
      '--note',
      'test',
    )
    const before = await scrape()
    for (let i = 0; i < 3; i++) {
      expect((await api(`/tokens/v2?access_token=${token}`)).status).toBe(200)
    }
    expect((await api('/tokens/v2?access_token=nope')).status).toBe(200)
    const after = await scrape()
    const delta = (name: string, labels: Record<string, string>) =>
      after.value(name, labels) - before.value(name, labels)
    const retrieve = { method: 'GET', route: '/tokens/v2' }
    expect(delta('tessera_http_requests_total', { ...retrieve, status: '200' })).toBe(4)
    expect(delta('tessera_http_request_duration_seconds_count', retrieve)).toBe(4)
    expect(delta('tessera_validations_total', { code: 'TokenValid', usage: 'pk' })).toBe(3)
    expect(delta('tessera_validations_total', { code: 'TokenMalformed', usage: 'none' })).toBe(1)
    expect(
      delta('tessera_rate_limit_decisions_total', { name: 'requests', decision: 'allowed' }),
    ).toBe(4)
  })

  it('includes the default process metrics', async () => {
    const now = await scrape()
    expect(now.types.get('process_cpu_user_seconds_total')).toBe('counter')
    expect(now.value('process_cpu_user_seconds_total')).toBeGreaterThan(0)
    expect(now.value('process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(now.value('process_start_time_seconds')).toBeGreaterThan(0)
    expect(now.types.get('nodejs_heap_size_total_bytes')).toBe('gauge')
    expect(now.types.get('nodejs_gc_duration_seconds')).toBe('histogram')
  })

  it('answers /metrics only: not other paths, and not on the API port', async () => {
    expect((await fetch(new URL('/', metricsUrl))).status).toBe(404)
    expect((await fetch(new URL('/metrics/x', metricsUrl))).status).toBe(404)
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404)
    expect((await api('/metrics')).status).toBe(404)
  })
})
