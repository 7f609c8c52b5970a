import { type Kysely, sql } from 'kysely'
import type { Database } from './schema.js'

type Executor = Kysely<Database>

export type DeliveryState = 'pending' | 'delivered' | 'failed'

/** One POST of an event to an endpoint, as stored and as the admin API shows it. */
export interface Attempt {
  at: string
  /** The HTTP status; null when there was no answer. */
  status: number | null
  /** Why it failed, when it did. */
  error?: string
  durationMs: number
}

/** Where the delivery of one event to one endpoint stands, with every attempt. */
export interface DeliveryRecord {
  eventId: string
  /** The outbox seq; null for a ping. */
  seq: number | null
  action: string
  state: DeliveryState
  /** The first attempt. */
  created: string
  /** When the next attempt is due, while pending. */
  nextAttempt?: string
  attempts: Attempt[]
}

/** A delivery as the dispatcher writes it after an attempt; `id` once it exists. */
export interface DeliveryWrite {
  id?: number
  eventId: string
  seq: number | null
  action: string
  state: DeliveryState
  created: string
  updated: string
  attempts: number
  nextAttempt: string | null
}

/**
 * Writes a delivery and its newest attempt (`attempts` is its number). Without an `id`, the
 * delivery is inserted, or, when the endpoint already has one for this event (its cursor was
 * set back, or an earlier write committed unseen), that one is updated and the attempt numbered
 * after its attempts: recording an event twice never fails.
 */
export async function writeDelivery(
  trx: Executor,
  endpointId: string,
  d: DeliveryWrite,
  a: Attempt,
) {
  let id = d.id
  let n = d.attempts
  const values = {
    state: d.state,
    updated: d.updated,
    attempts: d.attempts,
    next_attempt: d.nextAttempt,
  }
  if (id === undefined) {
    const row = await trx
      .insertInto('webhook_deliveries')
      .values({
        endpoint_id: endpointId,
        event_id: d.eventId,
        seq: d.seq,
        action: d.action,
        created: d.created,
        ...values,
      })
      .onConflict((oc) =>
        oc.columns(['endpoint_id', 'event_id']).doUpdateSet({
          state: d.state,
          updated: d.updated,
          attempts: sql<number>`webhook_deliveries.attempts + 1`,
          next_attempt: d.nextAttempt,
        }),
      )
      .returning(['id', 'attempts'])
      .executeTakeFirstOrThrow()
    id = Number(row.id)
    n = Number(row.attempts)
  } else {
    await trx.updateTable('webhook_deliveries').set(values).where('id', '=', id).execute()
  }
  await trx
    .insertInto('webhook_attempts')
    .values({
      delivery_id: id,
      n,
      at: a.at,
      status: a.status,
      error: a.error ?? null,
      duration_ms: a.durationMs,
    })
    .execute()
  return id
}

/** The deliveries of events to webhook endpoints, and their attempts. */
export const deliveryRepo = {
  /** A delivery under way (pending), to carry on its attempts. */
  async pending(db: Executor, endpointId: string, eventId: string) {
    const row = await db
      .selectFrom('webhook_deliveries')
      .select(['id', 'attempts', 'created'])
      .where('endpoint_id', '=', endpointId)
      .where('event_id', '=', eventId)
      .where('state', '=', 'pending')
      .executeTakeFirst()
    return row && { id: Number(row.id), attempts: row.attempts, created: row.created }
  },

  /** The internal position of a delivery, for paging by event id. */
  async position(db: Executor, endpointId: string, eventId: string) {
    const row = await db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', endpointId)
      .where('event_id', '=', eventId)
      .executeTakeFirst()
    return row && Number(row.id)
  },

  /** Newest first, with their attempts oldest first. */
  async list(
    db: Executor,
    endpointId: string,
    before: number | undefined,
    limit: number,
  ): Promise<DeliveryRecord[]> {
    let q = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId)
    if (before !== undefined) q = q.where('id', '<', before)
    const rows = await q.orderBy('id', 'desc').limit(limit).execute()
    if (rows.length === 0) return []
    const attempts = await db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where(
        'delivery_id',
        'in',
        rows.map((r) => r.id),
      )
      .orderBy('delivery_id')
      .orderBy('n')
      .execute()
    const byDelivery = new Map<number, Attempt[]>()
    for (const a of attempts) {
      const attempt: Attempt = { at: a.at, status: a.status, durationMs: a.duration_ms }
      if (a.error !== null) attempt.error = a.error
      const list = byDelivery.get(Number(a.delivery_id))
      if (list === undefined) byDelivery.set(Number(a.delivery_id), [attempt])
      else list.push(attempt)
    }
    return rows.map((r) => {
      const d: DeliveryRecord = {
        eventId: r.event_id,
        seq: r.seq === null ? null : Number(r.seq),
        action: r.action,
        state: r.state as DeliveryState,
        created: r.created,
        attempts: byDelivery.get(Number(r.id)) ?? [],
      }
      if (r.next_attempt !== null) d.nextAttempt = r.next_attempt
      return d
    })
  },

  /** Removes finished deliveries last changed before `before` (ISO); answers how many. */
  async prune(db: Executor, before: string): Promise<number> {
    const result = await db
      .deleteFrom('webhook_deliveries')
      .where('updated', '<', before)
      .where('state', '<>', 'pending')
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  },
}
