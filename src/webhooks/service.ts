import type { Kysely } from 'kysely'
import { type Actor, auditActions, auditEvent, newEventId } from '../audit/events.js'
import { eventIdPattern } from '../audit/query.js'
import { auditRepo } from '../db/audit.js'
import { outboxRepo } from '../db/outbox.js'
import type { Database } from '../db/schema.js'
import { type DeliveryRecord, deliveryRepo } from '../db/webhook-deliveries.js'
import { type EndpointRecord, webhookRepo } from '../db/webhooks.js'
import { ApiError, fail } from '../errors.js'
import { randomAlnum } from '../ids.js'
import { isoTime } from '../time.js'
import type { Sender } from './sender.js'
import { newSecret } from './signature.js'
import { parseEndpointUrl, type Resolver, resolveTarget } from './target.js'

/** An endpoint as the admin API and the CLI show it: never its secret, but at creation. */
export interface Endpoint {
  id: string
  url: string
  /** Empty: every action. */
  events: string[]
  created: string
  state: EndpointRecord['state']
}

export interface WebhookServiceDeps {
  db: Kysely<Database>
  sender: Sender
  allowPrivate: boolean
  now: () => number
  resolve?: Resolver
  /** Told when an endpoint is added, so that a dispatcher in this process looks at once. */
  added?: () => void
}

/** `wh_`, 9 base-36 digits of the creation time (ids sort by age), 10 random characters. */
const newEndpointId = (now: number) =>
  `wh_${Math.max(0, Math.floor(now)).toString(36).padStart(9, '0')}${randomAlnum(10)}`
export const endpointIdPattern = /^wh_[0-9a-z]{19}$/

const known = new Set<string>(auditActions)

const view = (e: EndpointRecord): Endpoint => ({
  id: e.id,
  url: e.url,
  events: e.events,
  created: e.created,
  state: e.state,
})

/** Webhook endpoints: what the admin API and `tessera webhook` both call. */
export class WebhookService {
  constructor(private readonly deps: WebhookServiceDeps) {}

  /**
   * Registers an endpoint; it receives the events committed from now on, but not the
   * `webhook.created` event of its own creation. The URL is checked as deliveries will check it
   * (https, a public address unless WEBHOOK_ALLOW_PRIVATE). The endpoint and its
   * `webhook.created` event are written in one transaction; a refused one writes neither.
   */
  async create(
    url: string,
    events: string[] | undefined,
    actor: Actor,
  ): Promise<Endpoint & { secret: string }> {
    const actions = [...new Set((events ?? []).map((a) => a.trim()))]
    for (const action of actions) {
      if (!known.has(action)) fail('invalidResources', `no such event: ${action.slice(0, 64)}`)
    }
    const target = parseEndpointUrl(url, this.deps.allowPrivate)
    await resolveTarget(target, this.deps.allowPrivate, this.deps.resolve)
    const now = this.deps.now()
    const record: EndpointRecord = {
      id: newEndpointId(now),
      url: target.href,
      secret: newSecret(),
      events: actions,
      created: isoTime(now),
      lastSeq: 0,
      state: 'healthy',
      retryAt: 0,
    }
    // Service-wide (no account); never the secret.
    const event = auditEvent(
      now,
      'webhook.created',
      actor,
      { type: 'webhook', id: record.id },
      undefined,
      { url: record.url, events: actions },
    )
    await this.deps.db.transaction().execute(async (trx) => {
      // The cursor starts at the newest event before this transaction's own: the endpoint's
      // `webhook.created` comes after it, and the dispatcher skips it (an endpoint is never
      // sent an event about itself: `aboutItself` in dispatcher.ts). The cursor cannot be set past
      // that event instead: its sequence number is only known once it is inserted (on
      // PostgreSQL, a sequence taken at insert), and the audit insert must be the
      // transaction's last write (it takes the outbox lock held to commit: see
      // `auditRepo.insert`), so the endpoint's row cannot be written after it.
      record.lastSeq = await outboxRepo.newest(trx)
      await webhookRepo.insert(trx, record)
      await auditRepo.insert(trx, event)
    })
    this.deps.added?.()
    return { ...view(record), secret: record.secret }
  }

  async get(id: string): Promise<Endpoint> {
    return view(await this.find(id))
  }

  async secret(id: string): Promise<{ id: string; secret: string }> {
    const { secret } = await this.find(id)
    return { id, secret }
  }

  /** In creation order, after the endpoint `after`. */
  async list(after: string | undefined, limit: number): Promise<Endpoint[]> {
    if (after !== undefined && !endpointIdPattern.test(after)) fail('badStart')
    return (await webhookRepo.list(this.deps.db, after, limit)).map(view)
  }

  /** Removes the endpoint with its deliveries, and writes its `webhook.deleted` event. */
  async remove(id: string, actor: Actor): Promise<void> {
    if (!endpointIdPattern.test(id)) throw missing(id)
    const event = auditEvent(this.deps.now(), 'webhook.deleted', actor, { type: 'webhook', id })
    await this.deps.db.transaction().execute(async (trx) => {
      if (!(await webhookRepo.remove(trx, id))) throw missing(id)
      await auditRepo.insert(trx, event)
    })
  }

  /**
   * Posts a `ping` event now, outside the endpoint's order and without retries, and answers the
   * delivery it recorded: `delivered` or `failed`, with its one attempt.
   */
  async ping(id: string): Promise<DeliveryRecord> {
    const endpoint = await this.find(id)
    const now = this.deps.now()
    const event = {
      id: newEventId(now),
      at: isoTime(now),
      action: 'ping',
      target: { type: 'webhook', id },
    }
    const sent = await this.deps.sender.send(endpoint, event.id, JSON.stringify(event))
    const { attempt } = sent
    const state = sent.delivered ? 'delivered' : 'failed'
    const delivery = { eventId: event.id, seq: null, action: event.action, state } as const
    const written = await webhookRepo.recordPing(
      this.deps.db,
      id,
      { ...delivery, created: attempt.at, updated: attempt.at, attempts: 1, nextAttempt: null },
      attempt,
    )
    if (!written) throw missing(id)
    return { ...delivery, created: attempt.at, attempts: [attempt] }
  }

  /** Newest first; `start` is the event id of the last delivery of the previous page. */
  async deliveries(id: string, start: string | undefined, limit: number) {
    await this.find(id)
    let before: number | undefined
    if (start !== undefined) {
      if (eventIdPattern.test(start)) before = await deliveryRepo.position(this.deps.db, id, start)
      if (before === undefined) fail('badStart')
    }
    return deliveryRepo.list(this.deps.db, id, before, limit)
  }

  private async find(id: string): Promise<EndpointRecord> {
    const endpoint = endpointIdPattern.test(id)
      ? await webhookRepo.get(this.deps.db, id)
      : undefined
    if (endpoint === undefined) throw missing(id)
    return endpoint
  }
}

const missing = (id: string) => new ApiError('notFound', `no such webhook: ${id.slice(0, 64)}`)
