import { type Kysely, PostgresAdapter } from 'kysely'

// Webhooks: the operator's endpoints, each following the outbox with its own cursor, and what
// was delivered to them. Shipped migrations are never edited.
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('url', 'varchar(2048)', (c) => c.notNull())
    // The HMAC key deliveries are signed with: it must be at hand to sign, so it is stored.
    .addColumn('secret', 'varchar(64)', (c) => c.notNull())
    // JSON array of actions; empty: every action.
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    // The last outbox seq handled: delivered, finally failed, or not matching the filter.
    .addColumn('last_seq', 'bigint', (c) => c.notNull())
    // `healthy`, or `failing` while the attempts at its next event fail.
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    // Epoch ms: the next retry of the event at the head, before which nobody claims it.
    .addColumn('retry_at', 'bigint', (c) => c.notNull().defaultTo(0))
    // The dispatcher delivering to it, until when (epoch ms).
    .addColumn('lease_owner', 'varchar(32)')
    .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', postgres ? 'bigserial' : 'integer', (c) =>
      postgres ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('endpoint_id', 'varchar(32)', (c) =>
      c.notNull().references('webhook_endpoints.id').onDelete('cascade'),
    )
    .addColumn('event_id', 'varchar(32)', (c) => c.notNull())
    // The outbox seq; null for a ping.
    .addColumn('seq', 'bigint')
    .addColumn('action', 'varchar(40)', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated', 'varchar(24)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt', 'varchar(24)')
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_by_event')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'event_id'])
    .unique()
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_by_endpoint')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'id'])
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_by_updated')
    .on('webhook_deliveries')
    .column('updated')
    .execute()
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'bigint', (c) =>
      c.notNull().references('webhook_deliveries.id').onDelete('cascade'),
    )
    .addColumn('n', 'integer', (c) => c.notNull())
    .addColumn('at', 'varchar(24)', (c) => c.notNull())
    // The HTTP status; null when there was no answer (refused address, connection, timeout).
    .addColumn('status', 'integer')
    .addColumn('error', 'varchar(256)')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'n'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_attempts').execute()
  await db.schema.dropTable('webhook_deliveries').execute()
  await db.schema.dropTable('webhook_endpoints').execute()
}
