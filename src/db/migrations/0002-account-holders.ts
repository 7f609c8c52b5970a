import type { Kysely } from 'kysely'

// Account holders of the dashboard: a password per account, one-time setup links and
// sessions. Secrets (link and session ids) are stored only as SHA-256 hashes.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('passwords')
    .addColumn('username', 'varchar(32)', (c) =>
      c.primaryKey().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('changed', 'varchar(24)', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('setup_links')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('username', 'varchar(32)', (c) =>
      c.notNull().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    // Set when the link is used or voided by a newer one: it then answers 410.
    .addColumn('ended', 'varchar(24)')
    .execute()
  await db.schema
    .createIndex('setup_links_by_username')
    .on('setup_links')
    .column('username')
    .execute()

  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('username', 'varchar(32)', (c) =>
      c.notNull().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('csrf', 'varchar(64)', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('last_seen', 'varchar(24)', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('sessions_by_username').on('sessions').column('username').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('sessions').execute()
  await db.schema.dropTable('setup_links').execute()
  await db.schema.dropTable('passwords').execute()
}
