import type { Kysely } from 'kysely'
import { auditActions, newEventId } from '../audit/events.js'
import { eventIdPattern } from '../audit/query.js'
import { outboxRepo } from '../db/outbox.js'
import type { Database } from '../db/schema.js'
import { type DeliveryRecord, type EndpointRecord, webhookRepo } from '../db/webhooks.js'
import { ApiError, fail } from '../errors.js'
import { randomAlnum } from '../tokens/ids.js'
import { isoTime } from '../tokens/rules.js'
import type { Sender } from './sender.js'
import { newSecret } from './signature.js'
import { parseEndpointUrl, type Resolver, resolveTarget, TargetError } from './target.js'

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
   * Registers an endpoint; it receives the events committed from now on. The URL is checked
   * as deliveries will check it (https, a public address unless WEBHOOK_ALLOW_PRIVATE).
   */
  async create(url: string, events: string[] = []): Promise<Endpoint & { secret: string }> {
    const actions = [...new Set(events.map((a) => a.trim()))]
    for (const action of actions) {
      if (!known.has(action)) fail('invalidResources', `no such event: ${action.slice(0, 64)}`)
    }
    let target: URL
    try {
      target = parseEndpointUrl(url, this.deps.allowPrivate)
      await resolveTarget(target, this.deps.allowPrivate, this.deps.resolve)
    } catch (err) {
      if (err instanceof TargetError) throw new ApiError('invalidResources', err.message)
      throw err
    }
    const now = this.deps.now()
    const record: EndpointRecord = {
      id: newEndpointId(now),
      url: target.href,
      secret: newSecret(),
      events: actions,
      created: isoTime(now),
      lastSeq: await outboxRepo.newest(this.deps.db),
      state: 'healthy',
      retryAt: 0,
    }
    await webhookRepo.insert(this.deps.db, record)
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

  async remove(id: string): Promise<void> {
    if (!endpointIdPattern.test(id) || !(await webhookRepo.remove(this.deps.db, id))) {
      throw missing(id)
    }
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
      if (eventIdPattern.test(start)) before = await webhookRepo.position(this.deps.db, id, start)
      if (before === undefined) fail('badStart')
    }
    return webhookRepo.deliveries(this.deps.db, id, before, limit)
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
