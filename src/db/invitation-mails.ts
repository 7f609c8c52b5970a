import { CompiledQuery, type Kysely, PostgresAdapter } from 'kysely'
import type { Database } from './schema.js'

type Executor = Kysely<Database>

/** The advisory lock that makes invitations count their mails one at a time (any constant). */
const invitationMailLockId = 0x1a7e3a11
const invitationMailLock = CompiledQuery.raw('select pg_advisory_xact_lock($1)', [
  invitationMailLockId,
])

export const invitationMailsRepo = {
  /**
   * In the transaction that adds an invitation, before it: the invitations made since `since`
   * (ISO) by the account, and to the address from any account. Counted one invitation at a
   * time across instances, so that concurrent ones cannot all pass a limit: on PostgreSQL after
   * a lock held until the transaction ends, on SQLite by its write lock (`begin immediate`).
   */
  async since(
    trx: Executor,
    username: string,
    email: string,
    since: string,
  ): Promise<{ account: number; address: number }> {
    if (trx.getExecutor().adapter instanceof PostgresAdapter) {
      await trx.executeQuery(invitationMailLock)
    }
    const count = async (column: 'username' | 'email', value: string) => {
      const row = await trx
        .selectFrom('invitations')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where(column, '=', value)
        .where('created', '>', since)
        .executeTakeFirstOrThrow()
      return Number(row.n)
    }
    return { account: await count('username', username), address: await count('email', email) }
  },
}
