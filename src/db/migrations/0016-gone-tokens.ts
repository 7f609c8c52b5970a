import type { Kysely } from 'kysely'

// Whose a deleted token was (issue 43): a token deleted while its account stays leaves its id,
// account and creation here, so that its string's refusals are counted against that account, and
// never against a later account of the same name (src/usage/attribution.ts). Written with the
// delete, in its transaction (tokensRepo); an account's go with it, so that a string of a deleted
// account, found in neither table, is counted against nobody. Tokens deleted before this
// migration left nothing: from now on their refusals are counted against nobody as well.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('gone_tokens')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('username', 'varchar(64)', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('gone_tokens_account').on('gone_tokens').column('username').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('gone_tokens').execute()
}
