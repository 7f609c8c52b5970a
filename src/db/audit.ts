import { CompiledQuery, type Kysely, PostgresAdapter, type Selectable } from 'kysely'
import type { AuditAction, AuditEvent, SignInMethod } from '../audit/events.js'
import type { AuditFilter } from '../audit/log.js'
import { compiledOnce, powerOfTwoRuns } from './compiled.js'
import type { AuditEventsTable, Database } from './schema.js'

type Executor = Kysely<Database>

const clip = (text: string | undefined, max: number) =>
  text === undefined ? null : text.slice(0, max)

export const toRow = (e: AuditEvent): AuditEventsTable =>
  auditRow(e, e.details === undefined ? null : JSON.stringify(e.details))

/** The row with its details as given: JSON text, or the object itself (see creates.ts). */
export const auditRow = <D>(e: AuditEvent, details: D | null) => ({
  id: e.id,
  at: e.at,
  action: e.action,
  actor_type: e.actor.type,
  actor_id: clip(e.actor.id, 64),
  actor_usage: e.actor.usage ?? null,
  actor_login: e.actor.login ?? null,
  actor_method: e.actor.method ?? null,
  username: clip(e.account, 64),
  target_type: e.target.type,
  target_id: clip(e.target.id, 64),
  address: clip(e.address, 64),
  request_id: clip(e.requestId, 64),
  details,
})

const toEvent = (row: Selectable<AuditEventsTable>): AuditEvent => {
  const event: AuditEvent = {
    id: row.id,
    at: row.at,
    action: row.action as AuditAction,
    actor: { type: row.actor_type as AuditEvent['actor']['type'] },
    target: { type: row.target_type as AuditEvent['target']['type'] },
  }
  if (row.actor_id !== null) event.actor.id = row.actor_id
  if (row.actor_usage !== null) event.actor.usage = row.actor_usage as 'pk' | 'sk' | 'tk'
  if (row.actor_login !== null) event.actor.login = row.actor_login
  if (row.actor_method !== null) event.actor.method = row.actor_method as SignInMethod
  if (row.username !== null) event.account = row.username
  if (row.target_id !== null) event.target.id = row.target_id
  if (row.address !== null) event.address = row.address
  if (row.request_id !== null) event.requestId = row.request_id
  if (row.details !== null) event.details = JSON.parse(row.details)
  return event
}

/** The advisory lock that orders the outbox on PostgreSQL (any constant of our own). */
export const outboxLockId = 0x7e55e4a
const outboxLock = CompiledQuery.raw('select pg_advisory_xact_lock($1)', [outboxLockId])

export const toOutboxRow = (e: AuditEvent) => outboxRow(e, JSON.stringify(e))

/** The outbox row with its body as given: JSON text, or the event itself (see creates.ts). */
export const outboxRow = <B>(e: AuditEvent, body: B) => ({
  event_id: e.id,
  at: e.at,
  action: e.action,
  username: clip(e.account, 64),
  body,
})

export const auditRepo = {
  /**
   * In the caller's transaction: the event commits or rolls back with its change. Each event is
   * also put in the integrations' outbox (event stream, webhooks), in the same transaction.
   * Make it the transaction's last write (see the lock below).
   */
  async insert(db: Executor, events: AuditEvent | AuditEvent[]): Promise<void> {
    const list = [events].flat()
    if (list.length === 0) return
    const write = async (trx: Executor) => {
      for (const rows of powerOfTwoRuns(list.map(toRow))) {
        // Parameters in the column order of toRow, which Kysely follows (compiledOnce checks it).
        const parameters: unknown[] = []
        for (const r of rows) {
          parameters.push(r.id, r.at, r.action, r.actor_type, r.actor_id, r.actor_usage)
          parameters.push(r.actor_login, r.actor_method)
          parameters.push(r.username, r.target_type, r.target_id, r.address, r.request_id)
          parameters.push(r.details)
        }
        await trx.executeQuery(
          compiledOnce(trx, `insert audit ${rows.length}`, parameters, () =>
            trx.insertInto('audit_events').values(rows),
          ),
        )
      }
      // On PostgreSQL a sequence number is taken at insert, not at commit: with this lock, held
      // until the transaction ends, numbers become visible in order, so a reader that sees one
      // has seen every number before it (a gap is a transaction rolled back, never one still
      // open). Hence the rule: the event is the last write of its transaction (no row lock is
      // taken while holding this one, so no deadlock).
      if (trx.getExecutor().adapter instanceof PostgresAdapter) {
        await trx.executeQuery(outboxLock)
      }
      for (const entries of powerOfTwoRuns(list.map(toOutboxRow))) {
        const values: unknown[] = []
        for (const o of entries) values.push(o.event_id, o.at, o.action, o.username, o.body)
        await trx.executeQuery(
          compiledOnce(trx, `insert outbox ${entries.length}`, values, () =>
            trx.insertInto('event_outbox').values(entries),
          ),
        )
      }
    }
    if (db.isTransaction) await write(db)
    else await db.transaction().execute(write)
  },

  /** Newest first. */
  async list(db: Executor, f: AuditFilter): Promise<AuditEvent[]> {
    let q = db.selectFrom('audit_events').selectAll()
    if (f.username !== undefined) q = q.where('username', '=', f.username)
    if (f.actions !== undefined && f.actions.length > 0) q = q.where('action', 'in', f.actions)
    if (f.since !== undefined) q = q.where('at', '>=', f.since)
    if (f.until !== undefined) q = q.where('at', '<', f.until)
    if (f.before !== undefined) q = q.where('id', '<', f.before)
    const rows = await q.orderBy('id', 'desc').limit(f.limit).execute()
    return rows.map(toEvent)
  },

  /** When the account of this name was last deleted after `since` (ISO), if it was. */
  async deletedSince(db: Executor, username: string, since: string): Promise<string | undefined> {
    const row = await db
      .selectFrom('audit_events')
      .select('at')
      .where('username', '=', username)
      .where('action', '=', 'account.deleted')
      .where('at', '>', since)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst()
    return row?.at
  },

  /** Removes events older than `before` (ISO); answers how many. */
  async prune(db: Executor, before: string): Promise<number> {
    const result = await db.deleteFrom('audit_events').where('at', '<', before).executeTakeFirst()
    return Number(result.numDeletedRows)
  },
}
