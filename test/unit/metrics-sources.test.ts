import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { type MetricSources, Metrics } from '../../src/metrics/metrics.js'
import { parsePrometheus } from '../prometheus.js'

/**
 * docs/development.md: the metrics are "fed by callbacks the context wires". They read plain
 * figures handed to them, and know no rate-limiter class: a leasing limiter's counter is named
 * by the context, its figures read when scraped.
 */

const root = path.resolve(import.meta.dirname, '../..')

const sources = (leases?: MetricSources['leases']): MetricSources => ({
  cache: { hits: 0, misses: 0, size: 0 },
  limitVerdicts: new Map(),
  feedLive: () => true,
  ready: () => true,
  processMetrics: false,
  leases,
})

const scrape = async (metrics: Metrics) => parsePrometheus(await metrics.registry.metrics())

describe('the lease metrics', () => {
  it('read the figures the context hands over, under the name of their counter', async () => {
    const figures = { errors: 2, calls: 5, shared: true }
    const redis = new Metrics(sources({ counter: 'redis', figures }))
    figures.calls = 7
    let now = await scrape(redis)
    expect(now.value('tessera_redis_errors_total')).toBe(2)
    expect(now.value('tessera_redis_rate_limit_calls_total')).toBe(7)
    expect(now.value('tessera_redis_up')).toBe(1)
    expect(now.types.has('tessera_worker_lease_up')).toBe(false)

    const worker = new Metrics(
      sources({ counter: 'worker', figures: { ...figures, shared: false } }),
    )
    now = await scrape(worker)
    expect(now.value('tessera_worker_lease_errors_total')).toBe(2)
    expect(now.value('tessera_worker_lease_calls_total')).toBe(7)
    expect(now.types.get('tessera_worker_lease_up')).toBe('gauge')
    expect(now.samples.find((s) => s.name === 'tessera_worker_lease_up')?.value).toBe(0)
    expect(now.types.has('tessera_redis_up')).toBe(false)
  })

  it('are not there for a limiter counting in process', async () => {
    const names = [...(await scrape(new Metrics(sources()))).types.keys()]
    expect(names.filter((n) => /redis|lease/.test(n))).toEqual([])
  })

  it('come from no import of a rate limiter: src/metrics imports nothing of src/ratelimit', () => {
    const dir = path.join(root, 'src/metrics')
    const imports = readdirSync(dir).flatMap((file) =>
      [...readFileSync(path.join(dir, file), 'utf8').matchAll(/from '([^']+)'/g)]
        .map((m) => m[1] as string)
        .filter((from) => from.includes('ratelimit'))
        .map((from) => `${file}: ${from}`),
    )
    expect(imports).toEqual([])
  })
})
