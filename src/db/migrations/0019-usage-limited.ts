import type { Kysely } from 'kysely'

// rate_limited by limit name (issue 44, docs/ratelimits.md). The `usage_*` tables (0013) count
// outcomes in one column each; a limit's name is the operator's to choose, so the split of
// `rate_limited` by name is rows of its own, in three tables of one shape beside them:
// usage_limited_minutes, _hours and _days, keyed as they are plus the name. A row is written in
// the same transaction as the `usage_*` row whose `rate_limited` it splits, and pruned on the
// same retention; the names of a row's split add up to at most its `rate_limited` (a verifier
// may report the count without the names). Few rows: only refusals by a limit have them, and
// an account has at most some 150 names (50 of its own, 50 of its plan's, 50 of a token's).
// Shipped migrations are never edited; add a new one instead.
const tables = [
  ['usage_limited_minutes', 16],
  ['usage_limited_hours', 13],
  ['usage_limited_days', 10],
] as const

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [table, width] of tables) {
    await db.schema
      .createTable(table)
      .addColumn('account', 'varchar(32)', (c) => c.notNull())
      .addColumn('at', `varchar(${width})`, (c) => c.notNull())
      .addColumn('token_id', 'varchar(25)', (c) => c.notNull())
      .addColumn('name', 'varchar(64)', (c) => c.notNull())
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ['account', 'at', 'token_id', 'name'])
      .execute()
    await db.schema.createIndex(`${table}_by_at`).on(table).column('at').execute()
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [table] of tables) await db.schema.dropTable(table).execute()
}
