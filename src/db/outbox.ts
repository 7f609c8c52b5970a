import type { Kysely } from 'kysely'
import type { Database } from './schema.js'

type Executor = Kysely<Database>

/** An event of the outbox: its sequence number and its JSON, as delivered. */
export interface OutboxEvent {
  seq: number
  action: string
  account: string | null
  body: string
}

export const outboxRepo = {
  /** Events after `seq`, oldest first. */
  async after(db: Executor, seq: number, limit: number): Promise<OutboxEvent[]> {
    const rows = await db
      .selectFrom('event_outbox')
      .select(['seq', 'action', 'username', 'body'])
      .where('seq', '>', seq)
      .orderBy('seq')
      .limit(limit)
      .execute()
    return rows.map((r) => ({
      seq: Number(r.seq),
      action: r.action,
      account: r.username,
      body: r.body,
    }))
  },

  /** The newest sequence number, 0 when the outbox is empty. */
  async newest(db: Executor): Promise<number> {
    const row = await db
      .selectFrom('event_outbox')
      .select((eb) => eb.fn.max('seq').as('seq'))
      .executeTakeFirst()
    return Number(row?.seq ?? 0)
  },

  /** The oldest sequence number still kept, or undefined when the outbox is empty. */
  async oldest(db: Executor): Promise<number | undefined> {
    const row = await db
      .selectFrom('event_outbox')
      .select((eb) => eb.fn.min('seq').as('seq'))
      .executeTakeFirst()
    return row?.seq == null ? undefined : Number(row.seq)
  },

  /**
   * Removes events older than `before` (ISO), but none after `upTo` when given (the events a
   * webhook endpoint has still to handle); answers how many.
   */
  async prune(db: Executor, before: string, upTo?: number): Promise<number> {
    let q = db.deleteFrom('event_outbox').where('at', '<', before)
    if (upTo !== undefined) q = q.where('seq', '<=', upTo)
    const result = await q.executeTakeFirst()
    return Number(result.numDeletedRows)
  },
}
