import { type Kysely, sql } from 'kysely'

// A roll's line: a token made by rolling another records the first token of the line (the
// rolled one's `lineage`, or its id when it has none). A retiring string may not roll, update or
// delete another token of its line (the tokens that replaced it): see TokenService. Null for a
// token no roll made. Never changes once written; read with the row, so no index.
//
// Tokens rolled before this migration and still retiring (24 hours at most) get their line from
// the audit log's `token.rolled` events (the new token as target, the old in `previous`), oldest
// first from a day before the earliest end; a line the log no longer has stays unrecorded.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tokens').addColumn('lineage', 'varchar(32)').execute()
  const { rows: ends } = await sql<{ first: string | null }>`
    select min(retires) as first from tokens where retires is not null`.execute(db)
  const first = ends[0]?.first
  if (first == null) return
  const since = new Date(Date.parse(first) - 25 * 3_600_000).toISOString()
  const { rows: events } = await sql<{ target_id: string | null; details: string | null }>`
    select target_id, details from audit_events
    where action = 'token.rolled' and at >= ${since} order by id`.execute(db)
  const lineage = new Map<string, string>()
  for (const event of events) {
    let previous: unknown
    try {
      previous = (JSON.parse(event.details ?? '{}') as { previous?: unknown }).previous
    } catch {
      continue
    }
    if (event.target_id === null || typeof previous !== 'string') continue
    lineage.set(event.target_id, lineage.get(previous) ?? previous)
  }
  for (const [id, root] of lineage) {
    await sql`update tokens set lineage = ${root} where id = ${id} and lineage is null`.execute(db)
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tokens').dropColumn('lineage').execute()
}
