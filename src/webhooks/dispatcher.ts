import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { type OutboxEvent, outboxRepo } from '../db/outbox.js'
import type { Database } from '../db/schema.js'
import { deliveryRepo } from '../db/webhook-deliveries.js'
import { type EndpointRecord, webhookRepo } from '../db/webhooks.js'
import { contiguous } from '../events/feed.js'
import { randomAlnum } from '../ids.js'
import { isoTime } from '../time.js'
import { afterAttempt, retriedSince } from './retry.js'
import { Sender } from './sender.js'
import { WebhookService } from './service.js'

export interface WebhookDeps {
  db: Kysely<Database>
  log: Logger
  config: Config
  now: () => number
}

const pollMs = 250
/** While no endpoint exists, only the endpoint table is looked at, this often. */
const idleMs = 1_000
const leaseMs = 60_000
/** A lease is given back after this much work (plus one attempt), well before it runs out. */
const runBudgetMs = 30_000
/** Endpoints served at once by one instance. */
const maxRuns = 8
const batch = 100
const horizonBatch = 500
const gapWaitMs = 2_000
const pruneEveryMs = 3_600_000

type Outcome = 'next' | 'wait' | 'stopped' | 'lost'

const parseEvent = (event: OutboxEvent) => JSON.parse(event.body) as { id: string; at?: string }

/**
 * Whether an event is about the endpoint itself: its own `webhook.created`, which follows its
 * cursor (the cursor cannot be set past it in the transaction that writes both: see
 * `WebhookService.create`), or its `webhook.deleted`, read by a run under way when it was
 * removed. Neither is sent to it; other endpoints get them as any event.
 */
function aboutItself(endpoint: EndpointRecord, event: OutboxEvent): boolean {
  if (event.action !== 'webhook.created' && event.action !== 'webhook.deleted') return false
  const { target } = JSON.parse(event.body) as { target?: { type?: string; id?: string } }
  return target?.type === 'webhook' && target.id === endpoint.id
}

/**
 * Delivers the outbox's events to the webhook endpoints: at least once, in order per endpoint.
 *
 * Every poll reads how far the outbox is contiguous (the horizon: nothing before it can still
 * appear, see `contiguous`), then claims endpoints that have events up to it with a lease in
 * the database, so that on PostgreSQL each endpoint is served by one instance at a time, and
 * posts their events one after the other. An endpoint's cursor moves past an event once it is
 * delivered, finally failed, not in its filter, or about the endpoint itself (`aboutItself`); a
 * failed attempt parks the endpoint until its retry (`retry_at`). Every write after an attempt
 * is fenced by the lease: an instance that lost it writes nothing.
 */
export class WebhookDispatcher {
  /** What the admin API and the CLI call. */
  readonly service: WebhookService
  private readonly sender: Sender
  private readonly owner = randomAlnum(16)
  private readonly gaps = new Map<number, number>()
  private horizon = 0
  private readonly runs = new Set<Promise<void>>()
  private readonly stopping = new AbortController()
  private timer: NodeJS.Timeout | undefined
  private pruneTimer: NodeJS.Timeout | undefined
  private polling: Promise<void> | undefined
  private again = false
  private started = false
  private failing = false

  constructor(readonly deps: WebhookDeps) {
    const { config, db, now } = deps
    this.sender = new Sender({
      allowPrivate: config.webhookAllowPrivate,
      caFile: config.webhookCaFile,
      now,
    })
    this.service = new WebhookService({
      db,
      sender: this.sender,
      allowPrivate: config.webhookAllowPrivate,
      now,
      added: () => this.wake(),
    })
  }

  /** Starts delivering (a serving process only). */
  start(): void {
    if (this.started || this.stopping.signal.aborted) return
    this.started = true
    this.schedule(0)
    this.pruneTimer = setInterval(() => this.prune(), pruneEveryMs)
    this.pruneTimer.unref()
  }

  /** Stops delivering; an attempt in flight is abandoned (not recorded: it is made again later). */
  async stop(): Promise<void> {
    this.stopping.abort()
    clearTimeout(this.timer)
    clearInterval(this.pruneTimer)
    await this.polling
    await Promise.allSettled([...this.runs])
  }

  private wake() {
    if (!this.started || this.stopping.signal.aborted) return
    if (this.polling === undefined) this.schedule(0)
    else this.again = true
  }

  private schedule(ms: number) {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => this.poll(), ms)
    this.timer.unref()
  }

  private poll() {
    if (this.stopping.signal.aborted || this.polling !== undefined) return
    this.again = false
    this.polling = this.step()
      .then(
        (next) => {
          if (this.failing) this.deps.log.info('webhooks: the database answers again')
          this.failing = false
          return next
        },
        (err: unknown) => {
          if (!this.failing) {
            this.deps.log.warn({ err: (err as Error).message }, 'webhooks: polling failed')
          }
          this.failing = true
          return idleMs
        },
      )
      .then((next) => {
        this.polling = undefined
        if (!this.stopping.signal.aborted) this.schedule(this.again ? 0 : next)
      })
  }

  /** One poll; answers when to poll next. */
  private async step(): Promise<number> {
    const { db } = this.deps
    const endpoints = await webhookRepo.schedule(db)
    if (endpoints.length === 0) return idleMs
    // Cursors only ever move over contiguous events: below the lowest, nothing can appear.
    const lowest = Math.min(...endpoints.map((e) => e.lastSeq))
    if (this.horizon < lowest) this.horizon = lowest
    // Gaps are waited for in real time (they are open transactions), whatever `now` says.
    const rows = await outboxRepo.after(db, this.horizon, horizonBatch)
    const ready = contiguous(this.horizon, rows, this.gaps, performance.now(), gapWaitMs)
    this.horizon = ready.at(-1)?.seq ?? this.horizon
    // Retries follow the service's clock; leases the real one (they guard against crashes).
    const now = this.deps.now()
    const clock = Date.now()
    let due = endpoints.filter(
      (e) => e.leaseUntil <= clock && e.retryAt <= now && e.lastSeq < this.horizon,
    ).length
    while (due-- > 0 && this.runs.size < maxRuns && !this.stopping.signal.aborted) {
      const endpoint = await webhookRepo.claim(db, {
        owner: this.owner,
        now,
        clock,
        until: clock + leaseMs,
        horizon: this.horizon,
      })
      if (endpoint === undefined) break
      this.launch(endpoint)
    }
    return rows.length === horizonBatch ? 0 : pollMs
  }

  private launch(endpoint: EndpointRecord) {
    const run: Promise<void> = this.serve(endpoint)
      .catch((err: unknown) =>
        this.deps.log.warn(
          { err: (err as Error).message, webhook: endpoint.id },
          'webhooks: delivery interrupted; carried on later',
        ),
      )
      .finally(() => {
        this.runs.delete(run)
        this.wake()
      })
    this.runs.add(run)
  }

  /** Posts the endpoint's next events in order until it waits, runs out or the budget is spent. */
  private async serve(endpoint: EndpointRecord): Promise<void> {
    const { db } = this.deps
    const until = performance.now() + runBudgetMs
    let cursor = endpoint.lastSeq
    let held = true
    // Only the first event the endpoint takes can have attempts already (it waited for a retry).
    let head = true
    try {
      while (!this.stopping.signal.aborted && performance.now() < until) {
        const horizon = this.horizon
        const events = (await outboxRepo.after(db, cursor, batch)).filter((e) => e.seq <= horizon)
        if (events.length === 0) return
        for (const event of events) {
          if (this.stopping.signal.aborted || performance.now() >= until) return
          const filtered = endpoint.events.length > 0 && !endpoint.events.includes(event.action)
          if (filtered || aboutItself(endpoint, event)) {
            cursor = event.seq
            continue
          }
          const outcome = await this.attempt(endpoint, event, cursor, head)
          head = false
          if (outcome === 'lost') held = false
          if (outcome !== 'next') return
          cursor = event.seq
        }
      }
    } finally {
      if (held) {
        await webhookRepo.release(db, {
          id: endpoint.id,
          owner: this.owner,
          lastSeq: cursor,
          now: Date.now(),
        })
      }
    }
  }

  private async attempt(
    endpoint: EndpointRecord,
    event: OutboxEvent,
    cursor: number,
    head: boolean,
  ): Promise<Outcome> {
    const { db, log } = this.deps
    const { id: eventId, at } = parseEvent(event)
    const previous = head ? await deliveryRepo.pending(db, endpoint.id, eventId) : undefined
    const sent = await this.sender.send(endpoint, eventId, event.body, this.stopping.signal)
    if (sent.aborted) return 'stopped'
    const now = this.deps.now()
    const attempts = (previous?.attempts ?? 0) + 1
    const created = previous?.created ?? sent.attempt.at
    const since = retriedSince(at, created, endpoint.created)
    const { state, retryAt } = afterAttempt(sent.delivered, attempts, now, since)
    const written = await webhookRepo.record(db, {
      endpointId: endpoint.id,
      owner: this.owner,
      endpoint: {
        lastSeq: state === 'pending' ? cursor : event.seq,
        state: sent.delivered ? 'healthy' : 'failing',
        retryAt,
      },
      delivery: {
        id: previous?.id,
        eventId,
        seq: event.seq,
        action: event.action,
        state,
        created,
        updated: isoTime(now),
        attempts,
        nextAttempt: state === 'pending' ? isoTime(retryAt) : null,
      },
      attempt: sent.attempt,
    })
    if (written === undefined) return 'lost'
    if (!sent.delivered) {
      const fields = { webhook: endpoint.id, event: eventId, attempts, error: sent.attempt.error }
      if (state === 'failed')
        log.warn(fields, 'webhooks: undelivered 24 hours after the event; given up')
      else log.info(fields, 'webhooks: attempt failed; retried later')
    }
    return state === 'pending' ? 'wait' : 'next'
  }

  /** Finished deliveries are kept as long as the outbox keeps events. */
  private prune() {
    const { config, db, log, now } = this.deps
    const before = isoTime(now() - config.eventRetentionHours * 3_600_000)
    deliveryRepo
      .prune(db, before)
      .catch((err: unknown) =>
        log.warn({ err: (err as Error).message }, 'webhooks: pruning deliveries failed'),
      )
  }
}
