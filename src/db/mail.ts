import type { Db } from './database.js'

/**
 * The addresses of an account's owners who gave one, in login order: who is told of what
 * happens to the account's tokens. Developers are not: a policy is the owners' to change.
 */
export async function ownerEmails(db: Db, username: string): Promise<string[]> {
  const rows = await db
    .selectFrom('memberships')
    .innerJoin('people', 'people.login', 'memberships.login')
    .select('people.email')
    .where('memberships.username', '=', username)
    .where('memberships.role', '=', 'owner')
    .where('people.email', 'is not', null)
    .orderBy('memberships.login')
    .execute()
  return [...new Set(rows.map((r) => r.email as string))]
}
