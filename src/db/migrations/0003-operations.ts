import type { Kysely } from 'kysely'

// Operating Tessera: accounts can be disabled; an audit log of every change; per-token last
// use (minute precision) and validations per hour. None of these tables references accounts:
// an account's events outlive it, and usage rows go with their token by the pruning job.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()

  await db.schema
    .createTable('audit_events')
    // Time-ordered: 13 hex digits of epoch ms, 4 of a sequence, 8 random base32 characters.
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('at', 'varchar(24)', (c) => c.notNull())
    .addColumn('action', 'varchar(40)', (c) => c.notNull())
    .addColumn('actor_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('actor_id', 'varchar(64)')
    .addColumn('actor_usage', 'varchar(2)')
    // The account the event concerns (kept as text: the account may be gone since).
    .addColumn('username', 'varchar(64)')
    .addColumn('target_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('target_id', 'varchar(64)')
    .addColumn('address', 'varchar(64)')
    .addColumn('request_id', 'varchar(64)')
    .addColumn('details', 'text')
    .execute()
  await db.schema
    .createIndex('audit_events_by_username')
    .on('audit_events')
    .columns(['username', 'id'])
    .execute()
  await db.schema.createIndex('audit_events_by_at').on('audit_events').column('at').execute()

  await db.schema
    .createTable('token_usage')
    .addColumn('token_id', 'varchar(25)', (c) => c.notNull())
    // `YYYY-MM-DDTHH` (UTC): the hour the validations fell in.
    .addColumn('hour', 'varchar(13)', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('token_usage_pk', ['token_id', 'hour'])
    .execute()
  await db.schema.createIndex('token_usage_by_hour').on('token_usage').column('hour').execute()

  await db.schema
    .createTable('token_last_used')
    .addColumn('token_id', 'varchar(25)', (c) => c.primaryKey())
    // ISO 8601 at minute precision: `YYYY-MM-DDTHH:MM:00.000Z`.
    .addColumn('at', 'varchar(24)', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('token_last_used').execute()
  await db.schema.dropTable('token_usage').execute()
  await db.schema.dropTable('audit_events').execute()
  await db.schema.alterTable('accounts').dropColumn('disabled').execute()
}
