import type { Kysely } from 'kysely'

// Rolling a token: the old one keeps working until `retires` (ISO 8601), then it is revoked
// (validation refuses it at once; a sweep removes the row). Shipped migrations are never edited.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tokens').addColumn('retires', 'varchar(24)').execute()
  await db.schema.createIndex('tokens_retiring').on('tokens').column('retires').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('tokens_retiring').execute()
  await db.schema.alterTable('tokens').dropColumn('retires').execute()
}
