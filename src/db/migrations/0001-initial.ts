import { type Kysely, sql } from 'kysely'

// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('username', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('plan', 'varchar(64)', (c) => c.notNull())
    .addColumn('features', 'text', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('tokens')
    .addColumn('id', 'varchar(25)', (c) => c.primaryKey())
    .addColumn('username', 'varchar(32)', (c) =>
      c.notNull().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('usage', 'varchar(2)', (c) => c.notNull())
    .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('scopeless', 'integer', (c) => c.notNull())
    .addColumn('key_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('modified', 'varchar(24)', (c) => c.notNull())
    // The token object of the wire (without its token string), as JSON: note, scopes and
    // allowed URLs live here, and a list page is built from these documents without
    // re-serializing every field of every row.
    .addColumn('document', 'text', (c) => c.notNull())
    .execute()

  // Keyset pagination walks (username, created, id) and (username, modified, id).
  await db.schema
    .createIndex('tokens_by_created')
    .on('tokens')
    .columns(['username', 'created', 'id'])
    .execute()
  await db.schema
    .createIndex('tokens_by_modified')
    .on('tokens')
    .columns(['username', 'modified', 'id'])
    .execute()
  // At most one default token per account.
  await sql`create unique index tokens_one_default on tokens (username) where is_default = 1`.execute(
    db,
  )
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('tokens').execute()
  await db.schema.dropTable('accounts').execute()
}
