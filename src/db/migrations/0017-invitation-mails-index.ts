import type { Kysely } from 'kysely'

// The limits of invitation mails (issue 43) count, before each invitation, the invitations to its
// address from any account in the last 24 hours (invitationMailsRepo.since: `email = ? and
// created > ?`). Nothing indexed `email`: each invitation read the whole table, under the lock
// that makes invitations count one at a time. This index answers that count from its entries.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('invitations_by_email')
    .on('invitations')
    .columns(['email', 'created'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('invitations_by_email').execute()
}
