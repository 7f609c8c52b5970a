import type { Kysely } from 'kysely'

// Named rate limits (issue 44, docs/ratelimits.md). An account's own limits are JSON on its row
// (null: none of its own; its plan's and the service's `requests` hold), as its token policy is.
// A token's own limits live in its document, as expiresAt does: no column. The overrides of the
// namespace API (`/admin/v1/ratelimits/{namespace}`) are rows of their own: an identifier may
// end in `*`, and the longest matching one wins.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('ratelimits', 'text').execute()
  await db.schema
    .createTable('ratelimit_overrides')
    .addColumn('namespace', 'varchar(64)', (c) => c.notNull())
    .addColumn('identifier', 'varchar(256)', (c) => c.notNull())
    .addColumn('quota', 'bigint', (c) => c.notNull())
    .addColumn('duration', 'bigint', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('modified', 'varchar(24)', (c) => c.notNull())
    .addPrimaryKeyConstraint('ratelimit_overrides_pk', ['namespace', 'identifier'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('ratelimit_overrides').execute()
  await db.schema.alterTable('accounts').dropColumn('ratelimits').execute()
}
