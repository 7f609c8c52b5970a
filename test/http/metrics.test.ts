import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { Env } from '../../src/config.js'
import { randomAlnum } from '../../src/ids.js'
import { RedisRateLimiter } from '../../src/ratelimit/redis.js'
import { all, call, type Harness, harness } from '../helpers.js'
import { parsePrometheus, type Scrape } from '../prometheus.js'

/**
 * /metrics counts exactly the requests made: each request below moves its counters by one, and
 * nothing else moves them. Redis is used when TEST_REDIS_URL is given.
 */
const redisEnv = (): Env =>
  process.env.TEST_REDIS_URL
    ? { REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: `tessera-test-${randomAlnum(8)}:` }
    : {}

const scrape = async (h: Harness) => parsePrometheus(await h.ctx.metrics.registry.metrics())

/** What moved between two scrapes. */
const moved = (before: Scrape, after: Scrape) => (name: string, labels?: Record<string, string>) =>
  after.value(name, labels) - before.value(name, labels)

let h: Harness
beforeAll(async () => {
  h = await harness({ METRICS_PORT: '0', RATE_LIMIT_PER_MINUTE: '10', ...redisEnv() })
  // Exact cache figures need the cache on; exact rate limits need one counter (Redis up).
  await vi.waitFor(() => expect(h.ctx.feedLive).toBe(true), { timeout: 10_000 })
  const limiter = h.ctx.rateLimiter
  if (limiter instanceof RedisRateLimiter) {
    await vi.waitFor(() => expect(limiter.shared).toBe(true), { timeout: 10_000 })
  }
})
afterAll(() => h.close())

describe('/metrics', () => {
  it('counts requests, validations, cache lookups and rate-limit verdicts exactly', async () => {
    const pk = h.alice.defaultToken.token as string
    const sk = (await h.token('alice', all)).token
    const gone = await h.token('alice', ['styles:read'])
    const forged = `${gone.token.slice(0, -22)}${'A'.repeat(22)}`
    const bobPk = h.bob.defaultToken.token as string
    const before = await scrape(h)

    const statuses: number[] = []
    const get = async (url: string, token?: string) => {
      const res = await call(h.app, 'GET', url, token)
      statuses.push(res.status)
      return res
    }
    for (let i = 0; i < 3; i++) await get('/tokens/v2', pk) // valid pk: a miss, then hits
    for (let i = 0; i < 2; i++) await get('/tokens/v2', 'not-a-token')
    await get('/tokens/v2') // no token: 422, counted by the limiter, no validation
    await get('/tokens/v2', forged)
    const deleted = await call(h.app, 'DELETE', `/tokens/v2/alice/${gone.id}`, sk) // sk: a miss
    expect(deleted.status).toBe(204)
    expect((await get('/tokens/v2', gone.token)).body.code).toBe('TokenRevoked') // a miss
    expect((await get('/tokens/v2/alice', sk)).status).toBe(200) // sk: a hit
    const expires = new Date(h.clock.now + 600_000).toISOString()
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk, { expires }) // sk: a hit
    expect(tk.status).toBe(200)
    expect((await get('/tokens/v2', tk.body.token)).body.code).toBe('TokenValid')
    expect((await get('/nowhere')).status).toBe(404)
    // Bob's limit of 10 a minute: the eleventh is refused.
    for (let i = 0; i < 11; i++) await get('/tokens/v2', bobPk) // a miss, then hits
    expect(statuses.slice(-2)).toEqual([200, 429])
    h.clock.now += 3_600_000
    expect((await get('/tokens/v2', tk.body.token)).body.code).toBe('TokenExpired')

    const after = await scrape(h)
    const delta = moved(before, after)
    const validations = (code: string, usage: string) =>
      delta('tessera_validations_total', { code, usage })
    expect(validations('TokenValid', 'pk')).toBe(3 + 11)
    expect(validations('TokenValid', 'sk')).toBe(3)
    expect(validations('TokenValid', 'tk')).toBe(1)
    expect(validations('TokenMalformed', 'none')).toBe(2)
    expect(validations('TokenInvalid', 'pk')).toBe(1)
    expect(validations('TokenRevoked', 'pk')).toBe(1)
    expect(validations('TokenExpired', 'tk')).toBe(1)
    const validated =
      sum(after, 'tessera_validations_total') - sum(before, 'tessera_validations_total')
    expect(validated).toBe(14 + 3 + 1 + 2 + 1 + 1 + 1)

    const lookups = (result: string) => delta('tessera_token_cache_lookups_total', { result })
    expect(lookups('miss')).toBe(1 + 1 + 1 + 1) // alice's pk and sk, the deleted one, bob's pk
    expect(lookups('hit')).toBe(2 + 2 + 10)

    const verdicts = (decision: string) =>
      delta('tessera_rate_limit_decisions_total', { name: 'requests', decision })
    expect(verdicts('allowed')).toBe(3 + 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 10 + 1)
    expect(verdicts('limited')).toBe(1)

    const requests = (method: string, route: string, status: string) =>
      delta('tessera_http_requests_total', { method, route, status })
    const retrieves = statuses.length - 2 // all but the list and the 404 went to retrieve
    expect(requests('GET', '/tokens/v2', '200')).toBe(retrieves - 2)
    expect(requests('GET', '/tokens/v2', '422')).toBe(1)
    expect(requests('GET', '/tokens/v2', '429')).toBe(1)
    expect(requests('DELETE', '/tokens/v2/:username/:token_id', '204')).toBe(1)
    expect(requests('GET', '/tokens/v2/:username', '200')).toBe(1)
    expect(requests('POST', '/tokens/v2/:username', '200')).toBe(1)
    expect(requests('GET', 'unmatched', '404')).toBe(1)
    expect(
      sum(after, 'tessera_http_requests_total') - sum(before, 'tessera_http_requests_total'),
    ).toBe(statuses.length + 2)

    const duration = 'tessera_http_request_duration_seconds'
    const retrieve = { method: 'GET', route: '/tokens/v2' }
    expect(delta(`${duration}_count`, retrieve)).toBe(retrieves)
    expect(delta(`${duration}_bucket`, { ...retrieve, le: '+Inf' })).toBe(retrieves)
    expect(delta(`${duration}_sum`, retrieve)).toBeGreaterThan(0)
    const buckets = after.samples.filter(
      (s) => s.name === `${duration}_bucket` && s.labels.route === '/tokens/v2',
    )
    expect(buckets.map((b) => b.value)).toEqual(buckets.map((b) => b.value).sort((a, b) => a - b))
    expect(delta(`${duration}_count`, { method: 'GET', route: 'unmatched' })).toBe(1)

    // The temporary token's audit event: one group commit of one item.
    expect(delta('tessera_group_commit_batch_size_count')).toBe(1)
    expect(delta('tessera_group_commit_batch_size_sum')).toBe(1)
    expect(delta('tessera_group_commit_batch_size_bucket', { le: '1' })).toBe(1)
    expect(after.value('tessera_change_feed_live')).toBe(1)
    expect(after.value('tessera_database_ready')).toBe(1)
    expect(after.value('tessera_token_cache_entries')).toBe(3) // alice's pk and sk, bob's pk
    expect(delta('tessera_database_errors_total', { where: 'request' })).toBe(0)
    if (h.ctx.config.redis) {
      expect(after.value('tessera_redis_up')).toBe(1)
      expect(delta('tessera_redis_errors_total')).toBe(0)
    }
  })

  it('types every family, and includes the process metrics when a listener is configured', async () => {
    const now = await scrape(h)
    expect(now.types.get('tessera_http_requests_total')).toBe('counter')
    expect(now.types.get('tessera_http_request_duration_seconds')).toBe('histogram')
    expect(now.types.get('tessera_change_feed_live')).toBe('gauge')
    expect(now.types.get('process_cpu_user_seconds_total')).toBe('counter')
    expect(now.value('process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(now.types.has('nodejs_eventloop_lag_seconds')).toBe(true)
  })

  it('counts a request answered 503 because the database is unreachable', async () => {
    const app = buildApp(h.ctx)
    app.get('/test/unreachable', async () => {
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
        code: 'ECONNREFUSED',
      })
    })
    await app.ready()
    try {
      const before = await scrape(h)
      expect((await app.inject({ url: '/test/unreachable' })).statusCode).toBe(503)
      const delta = moved(before, await scrape(h))
      expect(delta('tessera_database_errors_total', { where: 'request' })).toBe(1)
      expect(
        delta('tessera_http_requests_total', {
          method: 'GET',
          route: '/test/unreachable',
          status: '503',
        }),
      ).toBe(1)
    } finally {
      await app.close()
    }
  })
})

describe('without METRICS_PORT', () => {
  let plain: Harness
  beforeAll(async () => {
    plain = await harness()
  })
  afterAll(() => plain.close())

  it('adds no request hook and no process metrics; validations are still counted', async () => {
    const res = await call(plain.app, 'GET', '/tokens/v2', plain.alice.defaultToken.token)
    expect(res.status).toBe(200)
    const now = await scrape(plain)
    expect(now.samples.some((s) => s.name === 'tessera_http_requests_total')).toBe(false)
    expect(now.types.has('process_cpu_user_seconds_total')).toBe(false)
    expect(now.value('tessera_validations_total', { code: 'TokenValid', usage: 'pk' })).toBe(1)
  })
})

describe('with Redis unreachable', () => {
  let degraded: Harness
  beforeAll(async () => {
    degraded = await harness({ METRICS_PORT: '0', REDIS_URL: 'redis://127.0.0.1:1' })
  })
  afterAll(() => degraded.close())

  it('counts Redis errors, reports Redis down, and still counts verdicts made in process', async () => {
    const limiter = degraded.ctx.rateLimiter as RedisRateLimiter
    await vi.waitFor(() => expect(limiter.errors).toBeGreaterThan(0), { timeout: 10_000 })
    const before = await scrape(degraded)
    await call(degraded.app, 'GET', '/tokens/v2', degraded.alice.defaultToken.token)
    const after = await scrape(degraded)
    expect(after.value('tessera_redis_up')).toBe(0)
    expect(after.value('tessera_redis_errors_total')).toBeGreaterThanOrEqual(1)
    expect(after.value('tessera_redis_errors_total')).toBeLessThanOrEqual(limiter.errors)
    expect(
      moved(before, after)('tessera_rate_limit_decisions_total', {
        name: 'requests',
        decision: 'allowed',
      }),
    ).toBe(1)
  })
})

function sum(scrape: Scrape, name: string) {
  return scrape.samples.filter((s) => s.name === name).reduce((n, s) => n + s.value, 0)
}
