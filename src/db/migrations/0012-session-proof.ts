import type { Kysely } from 'kysely'

// `proven`: when the person last proved who they are in this session (the sign-in, or a
// password or code given again): adding or removing a sign-in method asks for a recent one.
// Null in sessions older than this migration: their sign-in time (`created`) counts.
// `link_account`: the account a portal link signed the session into; the platform vouched for
// the person there, and nowhere else (a required second factor holds them in other accounts).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('proven', 'varchar(24)').execute()
  await db.schema.alterTable('sessions').addColumn('link_account', 'varchar(32)').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('link_account').execute()
  await db.schema.alterTable('sessions').dropColumn('proven').execute()
}
