import { type Kysely, PostgresAdapter } from 'kysely'

// Rolling a token: the old one keeps working until `retires` (ISO 8601), then it is revoked
// (validation refuses it at once; a sweep removes the row). Shipped migrations are never edited.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tokens').addColumn('retires', 'varchar(24)').execute()
  await db.schema.createIndex('tokens_retiring').on('tokens').column('retires').execute()
  // A live token reported leaked and kept (a restricted pk): when, for the dashboard's banner.
  await db.schema.alterTable('tokens').addColumn('leaked', 'varchar(24)').execute()
  // Leak reports already handled, by the SHA-256 of their body: a replay is answered as before.
  await db.schema
    .createTable('leak_reports')
    .addColumn('body_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('at', 'varchar(24)', (c) => c.notNull())
    .addColumn('answer', 'text', (c) => c.notNull())
    .execute()
  // SQLite: token changes made by another process (the CLI rolls, deletes), for the server to
  // read (PostgreSQL tells its instances with NOTIFY instead).
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) {
    await db.schema
      .createTable('token_changes')
      .addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('id', 'varchar(32)', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .execute()
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('token_changes').ifExists().execute()
  await db.schema.dropTable('leak_reports').execute()
  await db.schema.alterTable('tokens').dropColumn('leaked').execute()
  await db.schema.dropIndex('tokens_retiring').execute()
  await db.schema.alterTable('tokens').dropColumn('retires').execute()
}
