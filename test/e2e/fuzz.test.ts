import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fuzz, prepare, report, signingKey } from '../../bench/fuzz.js'
import { api } from './client.js'
import { type ServerProcess, startServer, tessera } from './server.js'

// The seeded CI pass of `npm run fuzz` (bench/fuzz.js): same grammar, fewer requests.
const requests = 10_000
const seed = 20_261_123

describe('a real server under 10,000 generated requests', () => {
  const key = signingKey()
  let server: ServerProcess

  beforeAll(async () => {
    server = await startServer({
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '1000000000',
      SIGNING_KEYS: key.env,
      DASHBOARD_SIGNUP: 'open',
      // No load shedding: a busy CI machine would otherwise see 503s that no input caused.
      SHED_DELAY_MS: '0',
    })
  })
  afterAll(() => server?.stop())

  it('answers every one without a 5xx, and is healthy after', async () => {
    const ca = readFileSync(server.certFile)
    const material = await prepare({
      base: server.url,
      ca,
      secret: key.secret,
      cli: (...args) => tessera(server.env, ...args),
    })
    const result = await fuzz({
      base: server.url,
      ca,
      material,
      requests,
      seed,
      concurrency: 16,
    })
    process.stdout.write(`fuzz, ${requests} requests:\n${report(result)}\n`)

    expect(result.fivexx).toBe(0)
    expect(result.failures).toEqual([])
    expect(Object.values(result.counts).reduce((a, b) => a + b, 0)).toBe(requests)
    const health = await api(server, 'GET', '/healthz')
    expect(health).toMatchObject({ status: 200, body: { status: 'ok' } })
    expect((await api(server, 'GET', '/readyz')).status).toBe(200)
    expect(server.output()).not.toMatch(/"level":(50|60)/)
  }, 180_000)
})
