import { type Kysely, PostgresAdapter, sql } from 'kysely'

// Token hygiene (issue 34).
// `accounts.token_policy`: the owner's token policy as JSON text (token-policy.ts), null for none.
// `token_warnings`: each warning given, once per token, kind and basis across a fleet (the
// primary key); the basis is the instant the warning is about (an end of life, a rolled token's
// end, or the last use an idle count starts from), so that a token extended or used again can
// be warned again. `at`: when it was given (idle deletion waits 7 days from it).
// `tokens_expiring`: the tokens with an `expiresAt` in their document, by it, for the sweep of
// warnings; partial on a substring test, so a create without one pays for the test alone (the
// document's own text holds `"expiresAt":` only as that key: a note's quotes are escaped).
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('token_policy', 'text').execute()
  await db.schema
    .createTable('token_warnings')
    .addColumn('token_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('basis', 'varchar(24)', (c) => c.notNull())
    .addColumn('username', 'varchar(64)', (c) => c.notNull())
    .addColumn('at', 'varchar(24)', (c) => c.notNull())
    .addPrimaryKeyConstraint('token_warnings_pk', ['token_id', 'kind', 'basis'])
    .execute()
  await db.schema
    .createIndex('token_warnings_account')
    .on('token_warnings')
    .columns(['username', 'kind'])
    .execute()
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`create index tokens_expiring on tokens (((document::json) ->> 'expiresAt'))
      where strpos(document, '"expiresAt":') > 0`.execute(db)
  } else {
    await sql`create index tokens_expiring on tokens (json_extract(document, '$.expiresAt'))
      where instr(document, '"expiresAt":') > 0`.execute(db)
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('tokens_expiring').execute()
  await db.schema.dropTable('token_warnings').execute()
  await db.schema.alterTable('accounts').dropColumn('token_policy').execute()
}
