import { type Kysely, PostgresAdapter } from 'kysely'
import type { Database } from './schema.js'

type Executor = Kysely<Database>

/** Trust policies (accounts.trust_policies) and exchanged `jti`s (migration 0020). */
export const exchangeRepo = {
  /**
   * The account's trust policies as stored (JSON text); undefined: no such account. `lock`: its
   * row held on PostgreSQL until the transaction ends (SQLite writes one at a time anyway).
   */
  async policies(db: Executor, username: string, lock = false): Promise<string | null | undefined> {
    let q = db.selectFrom('accounts').select('trust_policies').where('username', '=', username)
    if (lock && db.getExecutor().adapter instanceof PostgresAdapter) q = q.forUpdate()
    const row = await q.executeTakeFirst()
    return row === undefined ? undefined : row.trust_policies
  },

  /** Replaces them; false when there is no such account. */
  async setPolicies(db: Executor, username: string, json: string | null): Promise<boolean> {
    const done = await db
      .updateTable('accounts')
      .set({ trust_policies: json })
      .where('username', '=', username)
      .executeTakeFirst()
    return done.numUpdatedRows > 0n
  },

  /**
   * Records an identity token's `jti` as used until `expires` (ISO): false when it is recorded
   * already, whichever instance recorded it (the primary key decides, in one statement).
   */
  async useJti(db: Executor, issuer: string, jti: string, expires: string): Promise<boolean> {
    const done = await db
      .insertInto('exchange_jtis')
      .values({ issuer, jti, expires })
      .onConflict((c) => c.columns(['issuer', 'jti']).doNothing())
      .executeTakeFirst()
    return Number(done.numInsertedOrUpdatedRows ?? 0n) > 0
  },

  /** Forgets the `jti`s of identity tokens past their end (and leeway): they are refused anyway. */
  async pruneJtis(db: Executor, before: string): Promise<number> {
    const done = await db
      .deleteFrom('exchange_jtis')
      .where('expires', '<', before)
      .executeTakeFirst()
    return Number(done.numDeletedRows)
  },
}
