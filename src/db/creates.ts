import { CompiledQuery, PostgresAdapter } from 'kysely'
import type { AuditEvent } from '../audit/events.js'
import { jsonString } from '../json.js'
import { auditRepo, outboxLockId, toOutboxRow, toRow } from './audit.js'
import { type Db, pipelined } from './database.js'
import { tokensRepo } from './repositories.js'
import { type TokenRecord, tokenDocument } from './token-document.js'

/**
 * New tokens, their audit events and the events' outbox rows in one statement: one round trip
 * and one implicit transaction, whatever the number of rows. Each table's rows go as one JSON
 * parameter (an array of objects named as the columns) that `json_to_recordset` makes rows of,
 * so the SQL text never changes (written by `rowsJson`: node-postgres turns arrays into array
 * literals in JS, escaping every element, and with the 29 arrays of the earlier
 * columns-as-arrays form that was 5 % of a create's time on the instance). The columns that
 * hold JSON text go as nested JSON (an event's details, an outbox body; see `RowsJson`) or, the
 * tokens' documents, as texts of their own, joined to their rows by position: newline-joined
 * (JSON text never holds a raw newline), so that neither side writes or parses them again as
 * JSON (a create has already written its token's document for its answer, and PostgreSQL stores
 * each text as it comes). The outbox's sequence numbers are taken after the advisory lock that
 * orders them (see auditRepo.insert): the lock's row joins each row.
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
 * The rows' JSON texts (JSON.stringify's, see rowsJson), with their JSON columns nested as values
 * rather than as strings of JSON text: inside a string every quote of that text is escaped.
 * PostgreSQL gives a text column the text of a nested value as it was sent (json keeps it; jsonb
 * would not). Except that it refuses the escapes of a NUL or a lone surrogate in it, which a
 * string of text would keep: with any `\u` in a value (those, other control characters, or a
 * backslash-u of the caller's own) the events' rows go with their columns as strings.
 */
interface RowsJson {
  tokens: string
  audit: string
  outbox: string
  /** A value was written with a `\u` in it. */
  escapes: boolean
}

let escapes = false
/** jsonString, noting a `\u` in what it writes (only a value it escaped can hold one). */
const json = (s: string): string => {
  const text = jsonString(s)
  if (text.length !== s.length + 2 && text.includes('\\u')) escapes = true
  return text
}
const jsonOrNull = (s: string | null | undefined): string => (s == null ? 'null' : json(s))
const clip = (s: string | undefined): string =>
  s === undefined ? 'null' : json(s.length > 64 ? s.slice(0, 64) : s)

/**
 * The texts that `JSON.stringify` makes of the tokens' rows (without their documents), of the
 * events' audit rows with their details nested, and of their outbox rows with the event nested
 * as its body (in the key order that auditEvent gives an event), written here rather than by
 * it: each value is checked once and written where it appears (an event's id three times), and
 * most values need no escaping (see jsonString). Counted: a create's instructions -6.3 %
 * (docs/performance.md). test/unit/creates-json.test.ts checks that the texts are the same.
 */
export function rowsJson(tokens: TokenRecord[], events: AuditEvent[]): RowsJson {
  escapes = false
  // Commas before all but the first row: slicing a string built of pieces would copy it.
  let a = '['
  let o = '['
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as AuditEvent
    const comma = i === 0 ? '' : ','
    const id = json(e.id)
    const at = json(e.at)
    const action = json(e.action)
    const { actor, target } = e
    const type = json(actor.type)
    const targetType = json(target.type)
    const details = e.details === undefined ? 'null' : JSON.stringify(e.details)
    if (details.includes('\\u')) escapes = true
    const body = eventJson(
      e,
      `{"id":${id},"at":${at},"action":${action}`,
      type,
      targetType,
      details,
    )
    const username = clip(e.account)
    a += `${comma}{"id":${id},"at":${at},"action":${action},"actor_type":${type},"actor_id":${clip(actor.id)},"actor_usage":${jsonOrNull(actor.usage)},"actor_login":${jsonOrNull(actor.login)},"actor_method":${jsonOrNull(actor.method)},"username":${username},"target_type":${targetType},"target_id":${clip(target.id)},"address":${clip(e.address)},"request_id":${clip(e.requestId)},"details":${details}}`
    o += `${comma}{"event_id":${id},"at":${at},"action":${action},"username":${username},"body":${body}}`
  }
  return { tokens: tokenRowsJson(tokens), audit: `${a}]`, outbox: `${o}]`, escapes }
}

function tokenRowsJson(tokens: TokenRecord[]): string {
  let t = '['
  for (let i = 0; i < tokens.length; i++) {
    const r = tokens[i] as TokenRecord
    t += `${i === 0 ? '' : ','}{"id":${jsonString(r.id)},"username":${jsonString(r.username)},"usage":${jsonString(r.usage)},"is_default":${r.isDefault ? 1 : 0},"scopeless":${r.scopeless ? 1 : 0},"key_id":${jsonString(r.keyId)},"created":${jsonString(r.created)},"modified":${jsonString(r.modified)}}`
  }
  return `${t}]`
}

/**
 * The event as JSON.stringify writes it, from its opening (id, at, action) and the values
 * rowsJson has written already, which the audit row repeats.
 */
function eventJson(
  e: AuditEvent,
  opening: string,
  type: string,
  targetType: string,
  details: string,
): string {
  const { actor, target } = e
  let body = `${opening},"actor":{"type":${type}`
  if (actor.id !== undefined) body += `,"id":${json(actor.id)}`
  if (actor.usage !== undefined) body += `,"usage":${json(actor.usage)}`
  if (actor.login !== undefined) body += `,"login":${json(actor.login)}`
  if (actor.method !== undefined) body += `,"method":${json(actor.method)}`
  body += `},"target":{"type":${targetType}`
  if (target.id !== undefined) body += `,"id":${json(target.id)}`
  body += '}'
  if (e.account !== undefined) body += `,"account":${json(e.account)}`
  if (e.address !== undefined) body += `,"address":${json(e.address)}`
  if (e.requestId !== undefined) body += `,"requestId":${json(e.requestId)}`
  if (e.details !== undefined) body += `,"details":${details}`
  return `${body}}`
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
    const rows = rowsJson(tokens, events)
    const parameters = [
      rows.tokens,
      rows.escapes ? JSON.stringify(events.map(toRow)) : rows.audit,
      String(outboxLockId),
      rows.escapes ? JSON.stringify(events.map(toOutboxRow)) : rows.outbox,
      (documents ?? tokens.map(tokenDocument)).join('\n'),
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
