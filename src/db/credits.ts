import { type Insertable, type Kysely, PostgresAdapter, type Selectable, sql } from 'kysely'
import type { CreditsTable, Database } from './schema.js'

type Executor = Kysely<Database>

/** A balance as stored: a token's (`tokenId`) or its account's (`tokenId` ''). */
export interface CreditRow {
  account: string
  tokenId: string
  remaining: number
  balance: number
  refillInterval: 'daily' | 'monthly' | null
  refillAmount: number | null
  refillDay: number | null
  /** ISO 8601: when the current period began (the last set or refill). */
  period: string
  /** The highest threshold (percent spent) announced in this period; 0 for none. */
  notified: number
  /** ISO 8601 of the last change by an operator; '' for a balance a plan gave. */
  changed: string
  /** The plan and its credits settings a balance came from; null when set by an operator. */
  plan: string | null
}

/** A lease granted to a verifier, as stored until a day after it expires. */
export interface LeaseRow {
  id: string
  account: string
  /** '' for a lease of the account's balance alone. */
  tokenId: string
  /** The periods of the balances it was taken from (ISO 8601); null: no such balance. */
  tokenPeriod: string | null
  accountPeriod: string | null
  granted: number
  expires: string
}

const toRecord = (r: Selectable<CreditsTable>): CreditRow => ({
  account: r.account,
  tokenId: r.token_id,
  remaining: Number(r.remaining),
  balance: Number(r.balance),
  refillInterval: r.refill_interval as CreditRow['refillInterval'],
  refillAmount: r.refill_amount === null ? null : Number(r.refill_amount),
  refillDay: r.refill_day,
  period: r.period,
  notified: r.notified,
  changed: r.changed,
  plan: r.plan,
})

const toTable = (c: CreditRow): Insertable<CreditsTable> => ({
  account: c.account,
  token_id: c.tokenId,
  remaining: c.remaining,
  balance: c.balance,
  refill_interval: c.refillInterval,
  refill_amount: c.refillAmount,
  refill_day: c.refillDay,
  period: c.period,
  notified: c.notified,
  changed: c.changed,
  plan: c.plan,
})

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter

export const creditsRepo = {
  /**
   * The balances of these token ids ('' for the account's), the account's first. `lock`: held
   * on PostgreSQL until the transaction ends, always in this order, so two transactions never
   * wait on each other's rows (SQLite writes one transaction at a time anyway).
   */
  async read(db: Executor, account: string, ids: string[], lock = false): Promise<CreditRow[]> {
    let q = db
      .selectFrom('credits')
      .selectAll()
      .where('account', '=', account)
      .where('token_id', 'in', ids)
      .orderBy('token_id')
    if (lock && isPostgres(db)) q = q.forUpdate()
    return (await q.execute()).map(toRecord)
  },

  /** The plan and creation time of an account, if there is one. */
  async owner(db: Executor, username: string) {
    return db
      .selectFrom('accounts')
      .select(['plan', 'created'])
      .where('username', '=', username)
      .executeTakeFirst()
  },

  async tokenOf(db: Executor, username: string, id: string): Promise<boolean> {
    const row = await db
      .selectFrom('tokens')
      .select('id')
      .where('id', '=', id)
      .where('username', '=', username)
      .executeTakeFirst()
    return row !== undefined
  },

  /** Writes the balance unless the account or token has one already. */
  async insertIfAbsent(db: Executor, row: CreditRow): Promise<void> {
    await db
      .insertInto('credits')
      .values(toTable(row))
      .onConflict((oc) => oc.columns(['account', 'token_id']).doNothing())
      .execute()
  },

  /** Writes the balance, replacing any. */
  async put(db: Executor, row: CreditRow): Promise<void> {
    const { account: _a, token_id: _t, ...rest } = toTable(row)
    await db
      .insertInto('credits')
      .values(toTable(row))
      .onConflict((oc) => oc.columns(['account', 'token_id']).doUpdateSet(rest))
      .execute()
  },

  async update(
    db: Executor,
    row: Pick<CreditRow, 'account' | 'tokenId'>,
    set: Partial<
      Pick<
        Insertable<CreditsTable>,
        'remaining' | 'balance' | 'period' | 'notified' | 'changed' | 'plan'
      >
    >,
  ): Promise<void> {
    await db
      .updateTable('credits')
      .set(set)
      .where('account', '=', row.account)
      .where('token_id', '=', row.tokenId)
      .execute()
  },

  /** Takes `cost` off the balance when it holds that much: the remaining after, or undefined. */
  async take(db: Executor, row: CreditRow, cost: number): Promise<number | undefined> {
    const done = await db
      .updateTable('credits')
      .set({ remaining: sql`remaining - ${cost}` })
      .where('account', '=', row.account)
      .where('token_id', '=', row.tokenId)
      .where('remaining', '>=', cost)
      .returning('remaining')
      .executeTakeFirst()
    return done === undefined ? undefined : Number(done.remaining)
  },

  /**
   * Gives `amount` back when the balance is still in the period `period`, never above the
   * period's balance; answers whether it did.
   */
  async giveBack(db: Executor, account: string, tokenId: string, amount: number, period: string) {
    const done = await db
      .updateTable('credits')
      .set({
        remaining: sql`case when remaining + ${amount} > balance then balance else remaining + ${amount} end`,
      })
      .where('account', '=', account)
      .where('token_id', '=', tokenId)
      .where('period', '=', period)
      .executeTakeFirst()
    return Number(done.numUpdatedRows) > 0
  },

  /** A token's balance goes to another token (a child's roll: tokens/updates.ts). */
  async move(db: Executor, account: string, from: string, to: string): Promise<void> {
    await db
      .updateTable('credits')
      .set({ token_id: to })
      .where('account', '=', account)
      .where('token_id', '=', from)
      .execute()
  },

  async remove(db: Executor, account: string, ids: string[]): Promise<number> {
    const done = await db
      .deleteFrom('credits')
      .where('account', '=', account)
      .where('token_id', 'in', ids)
      .executeTakeFirst()
    return Number(done.numDeletedRows)
  },

  /** Records a granted lease. */
  async grant(db: Executor, lease: LeaseRow): Promise<void> {
    await db
      .insertInto('credit_leases')
      .values({
        id: lease.id,
        account: lease.account,
        token_id: lease.tokenId,
        token_period: lease.tokenPeriod,
        account_period: lease.accountPeriod,
        granted: lease.granted,
        returned: null,
        expires: lease.expires,
      })
      .execute()
  },

  /** The leases of these ids that were never returned. */
  async outstanding(db: Executor, ids: string[]): Promise<LeaseRow[]> {
    if (ids.length === 0) return []
    const rows = await db
      .selectFrom('credit_leases')
      .selectAll()
      .where('id', 'in', ids)
      .where('returned', 'is', null)
      .execute()
    return rows.map((r) => ({
      id: r.id,
      account: r.account,
      tokenId: r.token_id,
      tokenPeriod: r.token_period,
      accountPeriod: r.account_period,
      granted: Number(r.granted),
      expires: r.expires,
    }))
  },

  /** Marks a lease returned with `amount`, unless it was already: answers whether it did. */
  async markReturned(db: Executor, id: string, amount: number): Promise<boolean> {
    const done = await db
      .updateTable('credit_leases')
      .set({ returned: amount })
      .where('id', '=', id)
      .where('returned', 'is', null)
      .executeTakeFirst()
    return Number(done.numUpdatedRows) > 0
  },

  /** Removes the leases that expired before `cutoff` (ISO 8601); answers how many. */
  async pruneLeases(db: Executor, cutoff: string): Promise<number> {
    const done = await db
      .deleteFrom('credit_leases')
      .where('expires', '<', cutoff)
      .executeTakeFirst()
    return Number(done.numDeletedRows)
  },
}
