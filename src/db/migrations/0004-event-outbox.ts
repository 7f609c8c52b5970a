import { type Kysely, PostgresAdapter } from 'kysely'

// The outbox of integrations (event stream, webhooks): every audit event is also written here,
// in the same transaction, under a sequence number that readers resume from. Kept for a
// shorter time than the audit log (EVENT_RETENTION_HOURS). Shipped migrations are never edited.
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('event_outbox')
    .addColumn('seq', postgres ? 'bigserial' : 'integer', (c) =>
      postgres ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('event_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('at', 'varchar(24)', (c) => c.notNull())
    .addColumn('action', 'varchar(40)', (c) => c.notNull())
    .addColumn('username', 'varchar(64)')
    // The event as delivered: the audit event's JSON.
    .addColumn('body', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('event_outbox_by_at').on('event_outbox').column('at').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('event_outbox').execute()
}
