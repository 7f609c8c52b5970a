import { type Kysely, sql } from 'kysely'

// How a person's email was proven, if it was: `sso` (a provider's `email_verified` claim) or
// `portal` (a portal link: the platform vouched for it, for one account). Null: the person
// typed it, or it came with an invitation nobody checked. Only a proven email may be matched
// across accounts; see MemberService. People who already have a single sign-on identity were
// matched by a verified email; people without a password or an identity were made by a portal
// link; everyone else is left unproven.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('people').addColumn('email_proof', 'varchar(16)').execute()
  await sql`update people set email_proof = 'sso'
    where email is not null and oidc_subject is not null`.execute(db)
  await sql`update people set email_proof = 'portal'
    where email is not null and oidc_subject is null and password is null`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('people').dropColumn('email_proof').execute()
}
