import { Writable } from 'node:stream'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { Database } from '../../src/db/schema.js'
import { type Harness, harness } from '../helpers.js'

let h: Harness
/** A log destination that keeps every line written to it. */
const capture = () => {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    },
  })
  return { lines, sink }
}
beforeAll(async () => {
  h = await harness()
})
afterAll(() => h.close())

describe('/healthz and /readyz', () => {
  it('answer without a token and without rate-limit headers', async () => {
    const health = await h.app.inject({ method: 'GET', url: '/healthz' })
    expect(health.statusCode).toBe(200)
    expect(health.json()).toEqual({ status: 'ok' })
    expect(health.headers['x-rate-limit-limit']).toBeUndefined()
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toEqual({ status: 'ready' })
  })

  it('readyz answers 503 with the reason while shutting down; healthz stays 200', async () => {
    h.ctx.draining = true
    try {
      const ready = await h.app.inject({ method: 'GET', url: '/readyz' })
      expect(ready.statusCode).toBe(503)
      expect(ready.json()).toEqual({ message: 'Service Unavailable', details: 'shutting down' })
      expect((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200)
    } finally {
      h.ctx.draining = false
    }
  })

  it('are not part of the API document', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    expect(Object.keys(doc.paths)).not.toContain('/healthz')
    expect(Object.keys(doc.paths)).not.toContain('/readyz')
  })
})

describe('behind TRUST_PROXY=1', () => {
  let proxied: Harness
  beforeAll(async () => {
    proxied = await harness({ TRUST_PROXY: '1' })
  })
  afterAll(() => proxied.close())

  it('a load balancer probes over plain HTTP, while the API still requires HTTPS', async () => {
    const ready = await proxied.app.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect((await proxied.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200)
    const api = await proxied.app.inject({ method: 'GET', url: '/tokens/v2?access_token=x' })
    expect(api.statusCode).toBe(403)
    expect(api.json()).toEqual({ message: 'HTTPS is required' })
  })
})

describe('at LOG_LEVEL=info', () => {
  it('probes write no log line; API requests do', async () => {
    const { lines, sink } = capture()
    const app = buildApp(h.ctx, { logger: pino({ level: 'info' }, sink) })
    await app.ready()
    try {
      await app.inject({ method: 'GET', url: '/healthz' })
      await app.inject({ method: 'GET', url: '/readyz' })
      expect(lines).toEqual([])
      await app.inject({ method: 'GET', url: '/tokens/v2?access_token=x' })
      expect(lines.length).toBeGreaterThan(0)
    } finally {
      await app.close()
    }
  })
})

describe('a database that does not answer', () => {
  it('readyz says so without its address; the address goes to the log', async () => {
    const { lines, sink } = capture()
    // A PostgreSQL pool on a port nothing listens on: the driver's message names the address.
    const unreachable = new Kysely<Database>({
      dialect: new PostgresDialect({
        pool: new pg.Pool({ connectionString: 'postgres://tessera@127.0.0.1:9/nowhere', max: 1 }),
      }),
    })
    const log = pino({ level: 'info' }, sink)
    const broken = Object.create(h.ctx, { db: { value: unreachable }, log: { value: log } })
    const app = buildApp(broken, { logger: log })
    await app.ready()
    try {
      const ready = await app.inject({ method: 'GET', url: '/readyz' })
      expect(ready.statusCode).toBe(503)
      expect(ready.json()).toEqual({
        message: 'Service Unavailable',
        details: 'the database does not answer',
      })
      const logged = lines.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith('readiness'))
      expect(logged.msg).toBe('readiness: the database does not answer')
      expect(logged.err).toContain('127.0.0.1:9')
    } finally {
      await app.close()
      await unreachable.destroy()
    }
  })
})
