import { type Kysely, PostgresAdapter, sql } from 'kysely'
import { compiledOnce } from './compiled.js'
import { toToken } from './repositories.js'
import type { Database } from './schema.js'
import type { TokenRecord } from './token-document.js'

type Executor = Kysely<Database>

export type SortBy = 'created' | 'modified'

export interface ListFilter {
  username: string
  usage?: 'pk' | 'sk'
  isDefault?: boolean
  sortby: SortBy
  /** Keyset position: rows strictly after (timestamp, id) in the listing's order. */
  after?: { at: string; id: string }
  limit: number
  /** Only the children of this token (docs/machines.md). */
  parent?: string
}

/**
 * An entry of a list page, one string per row (SQLite builds a row's values into JS strings and
 * an object at a price per column): an `sk` entry is its stored document; a `pk` entry is
 * `<key id> <token id> <document>`, what its token string is derived from. Neither id has a space.
 */
export type ListedEntry = string

const listedEntry = sql<string>`case when usage = 'sk' then document else key_id || ' ' || id || ' ' || document end`

/** Pages of an account's tokens: the API's list (keyset by created or modified), the dashboard's. */
export const tokenPagesRepo = {
  async list(db: Executor, f: ListFilter): Promise<ListedEntry[]> {
    const column = f.sortby
    const direction = f.sortby === 'created' ? 'asc' : 'desc'
    const { usage, isDefault, after, parent } = f
    const isDefaultValue = isDefault === undefined ? undefined : isDefault ? 1 : 0
    const parameters: unknown[] = [f.username]
    if (usage !== undefined) parameters.push(usage)
    if (isDefaultValue !== undefined) parameters.push(isDefaultValue)
    if (parent !== undefined) parameters.push(parent)
    if (after !== undefined) parameters.push(after.at, after.id)
    parameters.push(f.limit)
    const shape = `list ${column} ${usage !== undefined} ${isDefault !== undefined} ${parent !== undefined} ${after !== undefined}`
    const { rows } = await db.executeQuery(
      compiledOnce(db, shape, parameters, () => {
        let q = db
          .selectFrom('tokens')
          .select(listedEntry.as('entry'))
          .where('username', '=', f.username)
        if (usage !== undefined) q = q.where('usage', '=', usage)
        if (isDefaultValue !== undefined) q = q.where('is_default', '=', isDefaultValue)
        if (parent !== undefined) q = q.where('parent', '=', parent)
        if (after !== undefined) {
          const op = direction === 'asc' ? '>' : '<'
          q = q.where((eb) => eb(eb.refTuple(column, 'id'), op, eb.tuple(after.at, after.id)))
        }
        return q.orderBy(column, direction).orderBy('id', direction).limit(f.limit)
      }),
    )
    return (rows as { entry: string }[]).map((row) => row.entry)
  },

  /**
   * A page of whole records in created order (the dashboard): after a position, or before one
   * (then read backwards, nearest first, and returned in created order); of one usage, and
   * whose note or id contains `search` (case aside), when asked.
   */
  async browse(
    db: Executor,
    f: {
      username: string
      after?: { at: string; id: string }
      before?: { at: string; id: string }
      usage?: 'pk' | 'sk'
      search?: string
      limit: number
    },
  ): Promise<{ rows: TokenRecord[] }> {
    const backwards = f.before !== undefined
    const at = f.before ?? f.after
    const direction = backwards ? 'desc' : 'asc'
    let q = db.selectFrom('tokens').selectAll().where('username', '=', f.username)
    if (f.usage !== undefined) q = q.where('usage', '=', f.usage)
    if (f.search !== undefined) {
      const pattern = `%${f.search.replace(/[\\%_]/g, '\\$&')}%`
      const note = isPostgres(db)
        ? sql`document::json ->> 'note'`
        : sql`json_extract(document, '$.note')`
      q = q.where(
        sql<boolean>`(lower(${note}) like lower(${pattern}) escape '\\' or lower(id) like lower(${pattern}) escape '\\')`,
      )
    }
    if (at !== undefined) {
      q = q.where((eb) =>
        eb(eb.refTuple('created', 'id'), backwards ? '<' : '>', eb.tuple(at.at, at.id)),
      )
    }
    const rows = await q
      .orderBy('created', direction)
      .orderBy('id', direction)
      .limit(f.limit)
      .execute()
    return { rows: rows.map(toToken) }
  },
}

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter
