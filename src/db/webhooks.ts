import { type Kysely, PostgresAdapter, type Selectable, sql } from 'kysely'
import type { Database, WebhookEndpointsTable } from './schema.js'
import { type Attempt, type DeliveryWrite, writeDelivery } from './webhook-deliveries.js'

type Executor = Kysely<Database>

export type EndpointState = 'healthy' | 'failing'

export interface EndpointRecord {
  id: string
  url: string
  secret: string
  /** Empty: every action. */
  events: string[]
  created: string
  /** The last outbox seq handled. */
  lastSeq: number
  state: EndpointState
  /** Epoch ms of the next retry of the event at the head; 0 when none waits. */
  retryAt: number
}

const toEndpoint = (row: Selectable<WebhookEndpointsTable>): EndpointRecord => ({
  id: row.id,
  url: row.url,
  secret: row.secret,
  events: JSON.parse(row.events),
  created: row.created,
  lastSeq: Number(row.last_seq),
  state: row.state as EndpointState,
  retryAt: Number(row.retry_at),
})

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * `last_seq` set to `seq` unless it is already further: a cursor never moves back. A write that
 * committed but whose reply was lost (the caller saw an error) may have moved it past an event
 * already recorded as delivered; writing the holder's older cursor over it would send that
 * event again and again.
 */
const cursorAtLeast = (db: Executor, seq: number) =>
  isPostgres(db) ? sql<number>`greatest(last_seq, ${seq})` : sql<number>`max(last_seq, ${seq})`

export const webhookRepo = {
  async insert(db: Executor, e: EndpointRecord): Promise<void> {
    await db
      .insertInto('webhook_endpoints')
      .values({
        id: e.id,
        url: e.url,
        secret: e.secret,
        events: JSON.stringify(e.events),
        created: e.created,
        last_seq: e.lastSeq,
        state: e.state,
        retry_at: e.retryAt,
        lease_owner: null,
        lease_until: 0,
      })
      .execute()
  },

  async get(db: Executor, id: string): Promise<EndpointRecord | undefined> {
    const row = await db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toEndpoint(row)
  },

  /** In id order, which is creation order. */
  async list(db: Executor, after: string | undefined, limit: number): Promise<EndpointRecord[]> {
    let q = db.selectFrom('webhook_endpoints').selectAll()
    if (after !== undefined) q = q.where('id', '>', after)
    return (await q.orderBy('id').limit(limit).execute()).map(toEndpoint)
  },

  /** Its deliveries and their attempts go with it. */
  async remove(db: Executor, id: string): Promise<boolean> {
    const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  },

  /** What the dispatcher looks at every poll: a small table, read whole. */
  async schedule(db: Executor) {
    const rows = await db
      .selectFrom('webhook_endpoints')
      .select(['id', 'last_seq', 'retry_at', 'lease_until'])
      .execute()
    return rows.map((r) => ({
      id: r.id,
      lastSeq: Number(r.last_seq),
      retryAt: Number(r.retry_at),
      leaseUntil: Number(r.lease_until),
    }))
  },

  /**
   * Leases one endpoint that has events up to `horizon` to handle and no retry to wait for,
   * the one served longest ago first (a released lease keeps its release time). On PostgreSQL,
   * `FOR UPDATE SKIP LOCKED` lets instances claim side by side without waiting on each other,
   * and never the same endpoint; the lease condition is checked again on the locked row.
   */
  async claim(
    db: Executor,
    c: {
      owner: string
      /** The service's clock, for retries. */
      now: number
      /** The real clock, for leases. */
      clock: number
      until: number
      horizon: number
    },
  ): Promise<EndpointRecord | undefined> {
    const row = await db
      .updateTable('webhook_endpoints')
      .set({ lease_owner: c.owner, lease_until: c.until })
      .where((eb) => {
        let next = eb
          .selectFrom('webhook_endpoints as w')
          .select('w.id')
          .where('w.lease_until', '<=', c.clock)
          .where('w.retry_at', '<=', c.now)
          .where('w.last_seq', '<', c.horizon)
          .orderBy('w.lease_until')
          .limit(1)
        if (isPostgres(db)) next = next.forUpdate().skipLocked()
        return eb('id', '=', next)
      })
      .where('lease_until', '<=', c.clock)
      .returningAll()
      .executeTakeFirst()
    return row && toEndpoint(row)
  },

  /**
   * Ends a lease, keeping how far the holder got (never moving the cursor back: see
   * `cursorAtLeast`); false when it was no longer the holder's.
   */
  async release(
    db: Executor,
    r: { id: string; owner: string; lastSeq: number; now: number },
  ): Promise<boolean> {
    const result = await db
      .updateTable('webhook_endpoints')
      .set({ last_seq: cursorAtLeast(db, r.lastSeq), lease_owner: null, lease_until: r.now })
      .where('id', '=', r.id)
      .where('lease_owner', '=', r.owner)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  },

  /**
   * An attempt, its delivery and the endpoint's progress, in one transaction, only while
   * `owner` holds the lease (an instance that lost it writes nothing); answers the delivery's id,
   * or undefined when the lease was lost or the endpoint removed.
   */
  async record(
    db: Executor,
    r: {
      endpointId: string
      owner: string
      endpoint: { lastSeq: number; state: EndpointState; retryAt: number }
      delivery: DeliveryWrite
      attempt: Attempt
    },
  ): Promise<number | undefined> {
    return db.transaction().execute(async (trx) => {
      const held = await trx
        .updateTable('webhook_endpoints')
        .set({
          last_seq: cursorAtLeast(trx, r.endpoint.lastSeq),
          state: r.endpoint.state,
          retry_at: r.endpoint.retryAt,
        })
        .where('id', '=', r.endpointId)
        .where('lease_owner', '=', r.owner)
        .executeTakeFirst()
      if (Number(held.numUpdatedRows) === 0) return undefined
      return writeDelivery(trx, r.endpointId, r.delivery, r.attempt)
    })
  },

  /** A ping's delivery (outside the endpoint's order: no lease). False: the endpoint is gone. */
  async recordPing(
    db: Executor,
    endpointId: string,
    delivery: DeliveryWrite,
    attempt: Attempt,
  ): Promise<boolean> {
    return db.transaction().execute(async (trx) => {
      const exists = await trx
        .selectFrom('webhook_endpoints')
        .select('id')
        .where('id', '=', endpointId)
        .executeTakeFirst()
      if (exists === undefined) return false
      await writeDelivery(trx, endpointId, delivery, attempt)
      return true
    })
  },

  /**
   * The smallest cursor of the endpoints, or undefined when there is none: the outbox keeps the
   * events after it, which some endpoint has still to handle.
   */
  async lowestCursor(db: Executor): Promise<number | undefined> {
    const row = await db
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.min('last_seq').as('seq'))
      .executeTakeFirst()
    return row?.seq == null ? undefined : Number(row.seq)
  },
}
