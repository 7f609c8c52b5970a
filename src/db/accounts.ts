import type { Kysely, Selectable } from 'kysely'
import type { NamedLimit } from '../ratelimit/named.js'
import { readTokenPolicy, type TokenPolicy } from '../token-policy.js'
import type { AccountsTable, Database } from './schema.js'

type Executor = Kysely<Database>

export interface AccountRecord {
  username: string
  plan: string
  features: string[]
  created: string
  disabled: boolean
  /** The owner's token policy, when they set one (the plan's is the catalog's). */
  policy?: TokenPolicy
  /** Its own named rate limits, when an operator set them (its plan's are the catalog's). */
  ratelimits?: NamedLimit[]
}

export const toAccount = (row: Selectable<AccountsTable>): AccountRecord => {
  // Written by setPolicy from a policy read the same way: a stored one always reads.
  const policy = row.token_policy == null ? '' : readTokenPolicy(JSON.parse(row.token_policy))
  return {
    username: row.username,
    plan: row.plan,
    features: JSON.parse(row.features),
    created: row.created,
    disabled: row.disabled === 1,
    ...(typeof policy === 'string' ? {} : { policy }),
    ...(row.ratelimits == null ? {} : { ratelimits: JSON.parse(row.ratelimits) as NamedLimit[] }),
  }
}

export const accountsRepo = {
  /**
   * Takes the account's row lock (PostgreSQL) so that two changes to its members cannot both
   * remove "the other" owner; SQLite writes one transaction at a time anyway.
   */
  async lock(trx: Executor, username: string): Promise<void> {
    await trx
      .updateTable('accounts')
      .set((eb) => ({ username: eb.ref('username') }))
      .where('username', '=', username)
      .execute()
  },
  async insert(db: Executor, a: AccountRecord): Promise<void> {
    await db
      .insertInto('accounts')
      .values({
        username: a.username,
        plan: a.plan,
        features: JSON.stringify(a.features),
        created: a.created,
        disabled: a.disabled ? 1 : 0,
      })
      .execute()
  },

  async update(db: Executor, a: AccountRecord): Promise<void> {
    await db
      .updateTable('accounts')
      .set({ plan: a.plan, features: JSON.stringify(a.features), disabled: a.disabled ? 1 : 0 })
      .where('username', '=', a.username)
      .execute()
  },

  /** Sets the account's own named rate limits (null: none). */
  async setRatelimits(db: Executor, username: string, limits: NamedLimit[] | null): Promise<void> {
    await db
      .updateTable('accounts')
      .set({ ratelimits: limits === null ? null : JSON.stringify(limits) })
      .where('username', '=', username)
      .execute()
  },

  /** Sets the owner's token policy (null: none). */
  async setPolicy(db: Executor, username: string, policy: TokenPolicy | null): Promise<void> {
    await db
      .updateTable('accounts')
      .set({ token_policy: policy === null ? null : JSON.stringify(policy) })
      .where('username', '=', username)
      .execute()
  },

  /**
   * Removes the account; its tokens, password, links and sessions go with it (cascade), and
   * what was kept of its deleted tokens: no string of it is its name's any more (gone_tokens).
   */
  async delete(db: Executor, username: string): Promise<boolean> {
    await db.deleteFrom('tokens').where('username', '=', username).execute()
    await db.deleteFrom('gone_tokens').where('username', '=', username).execute()
    const result = await db
      .deleteFrom('accounts')
      .where('username', '=', username)
      .executeTakeFirst()
    return result.numDeletedRows > 0n
  },

  /** A page of accounts in username order, after `after`. */
  async list(db: Executor, f: { after?: string; limit: number }): Promise<AccountRecord[]> {
    let q = db.selectFrom('accounts').selectAll()
    if (f.after !== undefined) q = q.where('username', '>', f.after)
    const rows = await q.orderBy('username').limit(f.limit).execute()
    return rows.map(toAccount)
  },

  async find(db: Executor, username: string): Promise<AccountRecord | undefined> {
    const row = await db
      .selectFrom('accounts')
      .selectAll()
      .where('username', '=', username)
      .executeTakeFirst()
    return row && toAccount(row)
  },
}
