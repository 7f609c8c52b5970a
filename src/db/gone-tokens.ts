import type { Kysely } from 'kysely'
import type { Database } from './schema.js'

type Executor = Kysely<Database>

/**
 * Deletes a token of an account that stays (with `unretired`, only if it is not retiring), and
 * keeps whose it was in gone_tokens, in the caller's transaction: its string's refusals are then
 * counted against that account and no later one of its name (TokenValidator, usage/attribution).
 * False when there was nothing to delete; the first delete keeps it, a second finds nothing.
 */
export async function deleteToken(
  db: Executor,
  username: string,
  id: string,
  unretired: boolean,
): Promise<boolean> {
  let row = db
    .selectFrom('tokens')
    .select(['id', 'username', 'created'])
    .where('id', '=', id)
    .where('username', '=', username)
  if (unretired) row = row.where('retires', 'is', null)
  await db
    .insertInto('gone_tokens')
    .columns(['id', 'username', 'created'])
    .expression(row)
    .onConflict((c) => c.column('id').doNothing())
    .execute()
  let gone = db.deleteFrom('tokens').where('id', '=', id).where('username', '=', username)
  if (unretired) gone = gone.where('retires', 'is', null)
  const result = await gone.executeTakeFirst()
  return result.numDeletedRows > 0n
}

export const goneTokensRepo = {
  /** Whose a token deleted while its account stayed was; undefined for any other id. */
  async find(db: Executor, id: string): Promise<{ username: string; created: string } | undefined> {
    return db
      .selectFrom('gone_tokens')
      .select(['username', 'created'])
      .where('id', '=', id)
      .executeTakeFirst()
  },
}
