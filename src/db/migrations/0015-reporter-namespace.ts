import { type Kysely, PostgresAdapter } from 'kysely'

// Scoped operator keys (issue 43): a verifier's reporter name is kept in the namespace of the
// operator key that sent it, `<key id>/<name>` (src/http/admin/usage.ts), up to 32 + 1 + 64
// characters. SQLite does not hold a varchar to its length; PostgreSQL widens the column in
// place (no rewrite: a longer varchar is binary coercible). Rows of before keep their bare
// names, which no key's reporter can be any more: an id in flight across the upgrade counts once
// more at most, and batch ids are random per verifier process.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
  await db.schema
    .alterTable('usage_reports')
    .alterColumn('reporter', (c) => c.setDataType('varchar(128)'))
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
  await db.schema
    .alterTable('usage_reports')
    .alterColumn('reporter', (c) => c.setDataType('varchar(64)'))
    .execute()
}
