import { CompiledQuery, PostgresAdapter } from 'kysely'
import type { AuditEvent } from '../audit/events.js'
import { tokenView } from '../tokens/document.js'
import { auditRepo, auditRow, outboxLockId, outboxRow, toOutboxRow, toRow } from './audit.js'
import { type Db, pipelined } from './database.js'
import { type TokenRecord, tokenRow, tokensRepo } from './repositories.js'

/**
 * New tokens, their audit events and the events' outbox rows in one statement: one round trip
 * and one implicit transaction, whatever the number of rows. Each table's rows go as one JSON
 * parameter (an array of objects named as the columns) that `json_to_recordset` makes rows of,
 * so the SQL text never changes. JSON because `JSON.stringify` is native: node-postgres turns
 * arrays into array literals in JS, escaping every element, and with the 29 arrays of the
 * earlier columns-as-arrays form that was 5 % of a create's time on the instance. The columns
 * that hold JSON text go as nested JSON (an event's details, an outbox body; see `nested`) or,
 * the tokens' documents, as texts of their own (see `tokenColumns`), joined to their rows by
 * position. The outbox's sequence numbers are taken after the advisory lock that orders them
 * (see auditRepo.insert): the lock's row joins each row.
 *
 * Its commit does not wait for the WAL to reach the disk (synchronous_commit off for this
 * transaction alone), as SQLite's WAL with synchronous=NORMAL does not: a crash of PostgreSQL or
 * its machine may lose the creates of the last few hundred milliseconds, whose clients then find
 * their tokens refused. Nothing that takes a right away (delete, update, roll) is written so.
 */
const postgresSql = `with t as (
  insert into tokens (id, username, usage, is_default, scopeless, key_id, created, modified, document)
  select r.id, r.username, r.usage, r.is_default, r.scopeless, r.key_id, r.created, r.modified,
    d.document
  from rows from (json_to_recordset($1::json) as (id text, username text, usage text,
    is_default int, scopeless int, key_id text, created text, modified text)) with ordinality
    as r(id, username, usage, is_default, scopeless, key_id, created, modified, n)
  join unnest(string_to_array($5, E'\\n')) with ordinality as d(document, n) using (n)
), a as (
  insert into audit_events (id, at, action, actor_type, actor_id, actor_usage, actor_login,
    actor_method, username, target_type, target_id, address, request_id, details)
  select * from json_to_recordset($2::json) as r(id text, at text, action text,
    actor_type text, actor_id text, actor_usage text, actor_login text, actor_method text,
    username text, target_type text, target_id text, address text, request_id text, details text)
)
insert into event_outbox (event_id, at, action, username, body)
select r.event_id, r.at, r.action, r.username, r.body
from (select pg_advisory_xact_lock($3), set_config('synchronous_commit', 'off', true)) l
cross join lateral rows from (json_to_recordset($4::json) as (event_id text, at text,
  action text, username text, body text)) with ordinality as r(event_id, at, action, username,
  body, n)
order by r.n`

/**
 * A token's row without its document: the documents go as a parameter of their own, their texts
 * joined by newlines (which JSON text written by `JSON.stringify` never holds), so that neither
 * side writes or parses them again as JSON: a create has already written its token's document
 * for its answer, and PostgreSQL stores each text as it comes.
 */
const tokenColumns = (t: TokenRecord) => tokenRow(t, undefined) // JSON.stringify leaves it out

/**
 * The rows as one JSON text, their JSON columns nested as values rather than as strings of JSON
 * text: inside a string every quote of that text is escaped, character by character (V8's
 * SerializeString was a tenth of a create's instructions). PostgreSQL gives a text column the
 * text of a nested value as it was sent (json keeps it; jsonb would not). Except that it refuses
 * the escapes of a NUL or a lone surrogate in it, which a string of text would keep: any `\u` in
 * the nested form (those, other control characters, or a backslash-u of the caller's own) and the
 * rows go with their columns as strings.
 */
function nested<T>(rows: T[], values: (row: T) => unknown, strings: (row: T) => unknown): string {
  const json = JSON.stringify(rows.map(values))
  return json.includes('\\u') ? JSON.stringify(rows.map(strings)) : json
}

/**
 * How many groups of creates may be out at once (see Batcher): two where the statement is
 * pipelined, so that PostgreSQL finds the next group waiting when it has written the last; one
 * on SQLite, where a write leaves nothing to wait for.
 */
export const insertDepth = (db: Db): number => (createsStatement(db) === undefined ? 1 : 2)

/** The pipelined statement of creates, on PostgreSQL with a pool of two or more. */
export const createsStatement = (db: Db) =>
  db.isTransaction ? undefined : pipelined(db, postgresSql)

/**
 * Writes new tokens with their audit events, atomically: one statement on PostgreSQL, one
 * transaction on SQLite (where a statement costs no round trip). On PostgreSQL the statement is
 * pipelined on a connection of its own (see PipelinedStatement) unless the pool has a single
 * connection or `db` is a transaction. `documents`, when given, are the tokens' documents
 * already written (SQLite takes them as they are).
 */
export async function insertWithEvents(
  db: Db,
  tokens: TokenRecord[],
  events: AuditEvent[],
  documents?: string[],
): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    // The documents are matched to their rows by position.
    if (documents !== undefined && documents.length !== tokens.length) {
      throw new Error(`${documents.length} documents for ${tokens.length} tokens`)
    }
    const parameters = [
      JSON.stringify(tokens.map(tokenColumns)),
      nested(events, (e) => auditRow(e, e.details ?? null), toRow),
      String(outboxLockId),
      nested(events, (e) => outboxRow(e, e), toOutboxRow),
      (documents ?? tokens.map((t) => JSON.stringify(tokenView(t)))).join('\n'),
    ]
    const statement = createsStatement(db)
    if (statement !== undefined) return statement.run(parameters)
    await db.executeQuery(CompiledQuery.raw(postgresSql, parameters))
    return
  }
  await db.transaction().execute(async (trx) => {
    await tokensRepo.insertMany(trx, tokens, documents)
    await auditRepo.insert(trx, events)
  })
}
