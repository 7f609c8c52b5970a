import { type Kysely, PostgresAdapter, type Selectable } from 'kysely'
import { fromToken, toToken } from './repositories.js'
import type { Database, TokensTable } from './schema.js'
import type { TokenRecord } from './token-document.js'

type Executor = Kysely<Database>

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter

/** Child tokens by their `parent` column (migration 0020): see tokens/family.ts. */
export const familyRepo = {
  /**
   * A token read for a change of its family, its row locked on PostgreSQL until the transaction
   * ends (SQLite writes one transaction at a time): a child made under it, its deletion and a
   * change of its bounds wait for each other, so none acts on what another is changing.
   */
  async lock(db: Executor, id: string): Promise<TokenRecord | undefined> {
    let q = db.selectFrom('tokens').selectAll().where('id', '=', id)
    if (isPostgres(db)) q = q.forUpdate()
    const row = await q.executeTakeFirst()
    return row && toToken(row as Selectable<TokensTable>)
  },

  /** The tokens whose parent is one of `ids`, in created order. */
  async children(db: Executor, ids: readonly string[]): Promise<TokenRecord[]> {
    if (ids.length === 0) return []
    const rows = await db
      .selectFrom('tokens')
      .selectAll()
      .where('parent', 'in', ids)
      .orderBy('created')
      .orderBy('id')
      .execute()
    return rows.map(toToken)
  },

  /** Moves a child to another parent, its document with it (the wire object shows `parent`). */
  async reparent(db: Executor, child: TokenRecord, parent: string): Promise<void> {
    const { id, username: _, ...changes } = fromToken({ ...child, parent })
    await db
      .updateTable('tokens')
      .set({ ...changes, parent })
      .where('id', '=', id)
      .execute()
  },
}
