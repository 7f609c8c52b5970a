import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client'
import { Buckets, PlainHistogram } from './histogram.js'
import { RequestStats } from './requests.js'

/** Buckets of `tessera_token_change_delay_seconds`: a worker learns of a change in ms. */
export const changeDelays = () =>
  new Buckets([0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5])

/** What the metrics read when scraped, from the context that owns it. */
export interface MetricSources {
  /** The token-record cache's figures. */
  cache: { readonly hits: number; readonly misses: number; readonly size: number }
  /** From a token change's write to this process dropping it from its cache (SQLite). */
  changeDelays?: Buckets
  /** A leasing rate limiter's figures and where it counts; none for one counting in process. */
  leases?: { counter: 'redis' | 'worker'; figures: LeaseFigures } | undefined
  /** Rate-limit verdicts by limit name (the checkpoint's LimitBook.byName). */
  limitVerdicts: ReadonlyMap<string, { allowed: number; limited: number }>
  feedLive(): boolean
  ready(): boolean
  /** Node's process metrics as well (they start timers and observers: only with a listener). */
  processMetrics: boolean
}

/** What a rate limiter counting in a shared counter (Redis, or a worker's primary) reports. */
export interface LeaseFigures {
  /** Connection errors and failed takes. */
  readonly errors: number
  /** Round trips to the counter. */
  readonly calls: number
  /** Counting in the shared counter now, rather than in process. */
  readonly shared: boolean
}

/** The names and help of the lease metrics, by counter. */
const leaseMetrics = {
  redis: {
    errors: ['tessera_redis_errors_total', 'Redis connection errors and failed commands'],
    calls: [
      'tessera_redis_rate_limit_calls_total',
      'Round trips to Redis for rate-limit counts and leases',
    ],
    up: ['tessera_redis_up', '1 while rate limits are counted in Redis'],
  },
  worker: {
    errors: [
      'tessera_worker_lease_errors_total',
      'Rate-limit counts and leases the primary did not answer in time',
    ],
    calls: [
      'tessera_worker_lease_calls_total',
      'Round trips to the primary for rate-limit counts and leases',
    ],
    up: ['tessera_worker_lease_up', '1 while rate limits are counted by the primary'],
  },
} as const

/**
 * prom-client's defaults but for its three gauges named like counters
 * (`nodejs_active_{handles,requests,resources}_total`), which `promtool check metrics` refuses:
 * their twins without the suffix (`nodejs_active_handles`, … by `type`) hold the same counts.
 */
function processMetrics(registry: Registry) {
  collectDefaultMetrics({ register: registry })
  for (const what of ['handles', 'requests', 'resources']) {
    registry.removeSingleMetric(`nodejs_active_${what}_total`)
  }
}

type Stored = 'TokenValid' | 'TokenInvalid' | 'TokenExpired' | 'TokenRevoked'

/** A validation as counted: its code, and the usage of a token string that parsed. */
export type CountedValidation =
  | { code: 'TokenMalformed' }
  | { code: Stored; parsed: { usage: 'pk' | 'sk' | 'tk' } }

type Row = [Record<string, string>, number]

/** prom-client metrics of one registry whose values are read from plain numbers when scraped. */
export function readers(registry: Registry) {
  const registers = [registry]
  return {
    counter(name: string, help: string, labelNames: string[], read: () => Row[]) {
      new Counter({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset()
          for (const [labels, value] of read()) this.inc(labels, value)
        },
      })
    },
    gauge(name: string, help: string, read: () => number) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read())
        },
      })
    },
  }
}

/** Usage counts a process did not write: dropped past the meter's bound, lost with a worker. */
export interface UsageLosses {
  /** Minutes (and their keys) dropped unwritten after too long without the database. */
  dropped: { minutes: number; keys: number }
  /** Verifications: those dropped, and (a primary's estimate) those of killed workers. */
  lost: { dropped: number; workerKilled: number }
}

/** `tessera_usage_dropped_total` and `tessera_usage_lost_total`: an instance's, or a primary's. */
export function registerUsageLosses(registry: Registry, losses: UsageLosses) {
  const { counter } = readers(registry)
  counter(
    'tessera_usage_dropped_total',
    'Usage counts dropped unwritten after too many minutes without the database, by what',
    ['what'],
    () => [
      [{ what: 'minutes' }, losses.dropped.minutes],
      [{ what: 'keys' }, losses.dropped.keys],
    ],
  )
  counter(
    'tessera_usage_lost_total',
    'Verifications whose usage counts were never written, by cause (worker_killed: an estimate)',
    ['cause'],
    () => [
      [{ cause: 'dropped' }, losses.lost.dropped],
      [{ cause: 'worker_killed' }, losses.lost.workerKilled],
    ],
  )
}

/**
 * Counters for Prometheus: plain numbers on the hot paths, turned into prom-client metrics only
 * when scraped. One registry per context (tests build several apps in one process).
 */
export class Metrics {
  readonly registry = new Registry()
  /** Requests by route and status, and their durations: counted only when METRICS_PORT is set. */
  readonly requests = new RequestStats()
  private readonly validations: Record<Stored, { pk: number; sk: number; tk: number }> = {
    TokenValid: { pk: 0, sk: 0, tk: 0 },
    TokenInvalid: { pk: 0, sk: 0, tk: 0 },
    TokenExpired: { pk: 0, sk: 0, tk: 0 },
    TokenRevoked: { pk: 0, sk: 0, tk: 0 },
  }
  private malformed = 0
  /** By where they were seen: a request answered 503, a usage flush that failed. */
  readonly databaseErrors = { request: 0, usage: 0 }
  /** Usage counts dropped unwritten (the database unreachable for too long). */
  readonly usageLosses: UsageLosses = {
    dropped: { minutes: 0, keys: 0 },
    lost: { dropped: 0, workerKilled: 0 },
  }
  /** Workload identity exchanges by outcome: `issued` or the RFC error answered. */
  readonly exchanges: Record<string, number> = {
    issued: 0,
    invalid_request: 0,
    invalid_grant: 0,
    invalid_scope: 0,
    temporarily_unavailable: 0,
    limited: 0,
  }
  /** The group commits of this context's Batchers: each batch's size, failed writes. */
  readonly groupCommits = { sizes: new Buckets([1, 2, 5, 10, 20, 50, 100, 200, 500]), failures: 0 }

  constructor(sources: MetricSources) {
    if (sources.processMetrics) processMetrics(this.registry)
    this.registerRequests()
    this.registerTokens(sources)
    this.registerDatabase(sources)
    this.registerLeases(sources.leases)
  }

  /** A validation answered (retrieve, or the guard of an authenticated route). */
  validated(validation: CountedValidation): void {
    if (validation.code === 'TokenMalformed') this.malformed++
    else this.validations[validation.code][validation.parsed.usage]++
  }

  private registerRequests() {
    readers(this.registry).counter(
      'tessera_http_requests_total',
      'Requests by route and status',
      ['method', 'route', 'status'],
      () => [...this.requests.counts()],
    )
    new PlainHistogram(
      {
        name: 'tessera_http_request_duration_seconds',
        help: 'Time from routing a request to the end of its response',
        labelNames: ['method', 'route'],
        registry: this.registry,
      },
      () => this.requests.durations(),
    )
  }

  private registerTokens({ cache, limitVerdicts }: MetricSources) {
    const { counter, gauge } = readers(this.registry)
    counter(
      'tessera_validations_total',
      'Token validations by code and usage',
      ['code', 'usage'],
      () => [
        ...Object.entries(this.validations).flatMap(([code, byUsage]) =>
          Object.entries(byUsage).map(([usage, n]): Row => [{ code, usage }, n]),
        ),
        [{ code: 'TokenMalformed', usage: 'none' }, this.malformed],
      ],
    )
    counter('tessera_token_cache_lookups_total', 'Token-record cache lookups', ['result'], () => [
      [{ result: 'hit' }, cache.hits],
      [{ result: 'miss' }, cache.misses],
    ])
    gauge('tessera_token_cache_entries', 'Token records in the cache', () => cache.size)
    counter(
      'tessera_token_exchanges_total',
      'Workload identity exchanges by outcome (issued, limited, or the OAuth error answered)',
      ['outcome'],
      () => Object.entries(this.exchanges).map(([outcome, n]): Row => [{ outcome }, n]),
    )
    // By limit name, not by key: operators name a bounded set (past 100 names, `other`).
    counter(
      'tessera_rate_limit_decisions_total',
      'Rate-limit verdicts by limit name',
      ['name', 'decision'],
      () =>
        [...limitVerdicts].flatMap(([name, counts]) => [
          [{ name, decision: 'allowed' }, counts.allowed],
          [{ name, decision: 'limited' }, counts.limited],
        ]) as [Record<string, string>, number][],
    )
  }

  private registerDatabase(sources: MetricSources) {
    const { counter, gauge } = readers(this.registry)
    gauge('tessera_change_feed_live', '1 while the change feed keeps token caches exact', () =>
      Number(sources.feedLive()),
    )
    gauge('tessera_database_ready', '1 once the database is reachable and migrated', () =>
      Number(sources.ready()),
    )
    counter(
      'tessera_database_errors_total',
      'Database failures by where they were seen',
      ['where'],
      () => [
        [{ where: 'request' }, this.databaseErrors.request],
        [{ where: 'group_commit' }, this.groupCommits.failures],
        [{ where: 'usage' }, this.databaseErrors.usage],
      ],
    )
    registerUsageLosses(this.registry, this.usageLosses)
    const delays = sources.changeDelays
    if (delays !== undefined) {
      new PlainHistogram(
        {
          name: 'tessera_token_change_delay_seconds',
          help: 'From the write of a token change (any process) to this process dropping the token from its cache',
          registry: this.registry,
        },
        () => [[{}, delays]],
      )
    }
    new PlainHistogram(
      {
        name: 'tessera_group_commit_batch_size',
        help: 'Items written together by each group commit of the process (tokens, audit events)',
        registry: this.registry,
      },
      () => [[{}, this.groupCommits.sizes]],
    )
  }

  /** The shared counter a leasing rate limiter counts in: Redis, or a worker's primary. */
  private registerLeases(leases: MetricSources['leases']) {
    if (leases === undefined) return
    const { counter, gauge } = readers(this.registry)
    const { errors, calls, up } = leaseMetrics[leases.counter]
    const { figures } = leases
    counter(errors[0], errors[1], [], () => [[{}, figures.errors]])
    counter(calls[0], calls[1], [], () => [[{}, figures.calls]])
    gauge(up[0], up[1], () => Number(figures.shared))
  }
}
