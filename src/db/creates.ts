import { CompiledQuery, PostgresAdapter } from 'kysely'
import type { AuditEvent } from '../audit/events.js'
import { auditRepo, outboxLockId, toOutboxRow, toRow } from './audit.js'
import type { Db } from './database.js'
import { fromToken, type TokenRecord, tokensRepo } from './repositories.js'

/**
 * New tokens, their audit events and the events' outbox rows in one statement: one round trip
 * and one implicit transaction, whatever the number of rows (columns go as arrays and `unnest`
 * makes the rows, so the SQL text never changes). The outbox's sequence numbers are taken after
 * the advisory lock that orders them (see auditRepo.insert): the lock's row joins each row.
 *
 * Its commit does not wait for the WAL to reach the disk (synchronous_commit off for this
 * transaction alone), as SQLite's WAL with synchronous=NORMAL does not: a crash of PostgreSQL or
 * its machine may lose the creates of the last few hundred milliseconds, whose clients then find
 * their tokens refused. Nothing that takes a right away (delete, update, roll) is written so.
 */
const postgresSql = (() => {
  let n = 0
  const p = (cast: string) => `$${++n}::${cast}`
  const texts = (count: number) => Array.from({ length: count }, () => p('text[]'))
  const tokens = [...texts(3), p('int[]'), p('int[]'), ...texts(4)]
  const audit = texts(14)
  const lock = `$${++n}`
  const outbox = texts(2)
  return `with t as (
  insert into tokens (id, username, usage, is_default, scopeless, key_id, created, modified, document)
  select * from unnest(${tokens.join(', ')})
), a as (
  insert into audit_events (id, at, action, actor_type, actor_id, actor_usage, actor_login,
    actor_method, username, target_type, target_id, address, request_id, details)
  select * from unnest(${audit.join(', ')})
)
insert into event_outbox (event_id, at, action, username, body)
select e.event_id, e.at, e.action, e.username, e.body
from (select pg_advisory_xact_lock(${lock}), set_config('synchronous_commit', 'off', true)) l
cross join lateral unnest(${audit[0]}, ${audit[1]}, ${audit[2]}, ${outbox.join(', ')})
  with ordinality as e(event_id, at, action, username, body, n)
order by e.n`
})()

const columns = <R>(rows: R[], keys: (keyof R)[]) => keys.map((k) => rows.map((r) => r[k]))

/**
 * Writes new tokens with their audit events, atomically: one statement on PostgreSQL, one
 * transaction on SQLite (where a statement costs no round trip).
 */
export async function insertWithEvents(
  db: Db,
  tokens: TokenRecord[],
  events: AuditEvent[],
): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    const t = tokens.map(fromToken)
    const a = events.map(toRow)
    const o = events.map(toOutboxRow)
    const parameters = [
      ...columns(t, ['id', 'username', 'usage', 'is_default', 'scopeless', 'key_id'] as const),
      ...columns(t, ['created', 'modified', 'document'] as const),
      ...columns(a, ['id', 'at', 'action', 'actor_type', 'actor_id', 'actor_usage'] as const),
      ...columns(a, ['actor_login', 'actor_method', 'username', 'target_type'] as const),
      ...columns(a, ['target_id', 'address', 'request_id', 'details'] as const),
      outboxLockId,
      ...columns(o, ['username', 'body'] as const),
    ]
    await db.executeQuery(CompiledQuery.raw(postgresSql, parameters))
    return
  }
  await db.transaction().execute(async (trx) => {
    await tokensRepo.insertMany(trx, tokens)
    await auditRepo.insert(trx, events)
  })
}
