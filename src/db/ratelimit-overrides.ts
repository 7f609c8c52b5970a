import { type Kysely, PostgresAdapter, type Selectable, sql } from 'kysely'
import type { Database, RatelimitOverridesTable } from './schema.js'

type Executor = Kysely<Database>

/** An override of the namespace API (docs/ratelimits.md): `identifier` may end in `*`. */
export interface OverrideRecord {
  namespace: string
  identifier: string
  limit: number
  /** Milliseconds. */
  duration: number
  created: string
  modified: string
}

// Bigint columns come back from PostgreSQL as strings.
const toOverride = (row: Selectable<RatelimitOverridesTable>): OverrideRecord => ({
  namespace: row.namespace,
  identifier: row.identifier,
  limit: Number(row.quota),
  duration: Number(row.duration),
  created: row.created,
  modified: row.modified,
})

/**
 * Identifiers in byte order on both dialects (a page's `start` is compared the same way), not
 * in the database's locale, which may order punctuation apart from SQLite's.
 */
const byBytes = (db: Executor) =>
  db.getExecutor().adapter instanceof PostgresAdapter
    ? sql<string>`identifier collate "C"`
    : sql<string>`identifier`

export const overridesRepo = {
  /** Every override of a namespace (at most `maxOverrides` of them: see the service). */
  async all(db: Executor, namespace: string): Promise<OverrideRecord[]> {
    const rows = await db
      .selectFrom('ratelimit_overrides')
      .selectAll()
      .where('namespace', '=', namespace)
      .execute()
    return rows.map(toOverride)
  },

  async get(db: Executor, namespace: string, identifier: string) {
    const row = await db
      .selectFrom('ratelimit_overrides')
      .selectAll()
      .where('namespace', '=', namespace)
      .where('identifier', '=', identifier)
      .executeTakeFirst()
    return row === undefined ? undefined : toOverride(row)
  },

  /** A page in identifier order, after `after` when given. */
  async list(db: Executor, namespace: string, after: string | undefined, limit: number) {
    let q = db.selectFrom('ratelimit_overrides').selectAll().where('namespace', '=', namespace)
    if (after !== undefined) q = q.where(byBytes(db), '>', after)
    const rows = await q.orderBy(byBytes(db)).limit(limit).execute()
    return rows.map(toOverride)
  },

  async count(db: Executor, namespace: string): Promise<number> {
    const row = await db
      .selectFrom('ratelimit_overrides')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('namespace', '=', namespace)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  },

  /** Sets an override, keeping `created` when it existed; the row as it now is. */
  async put(db: Executor, o: OverrideRecord): Promise<OverrideRecord> {
    const row = await db
      .insertInto('ratelimit_overrides')
      .values({
        namespace: o.namespace,
        identifier: o.identifier,
        quota: o.limit,
        duration: o.duration,
        created: o.created,
        modified: o.modified,
      })
      .onConflict((oc) =>
        oc
          .columns(['namespace', 'identifier'])
          .doUpdateSet({ quota: o.limit, duration: o.duration, modified: o.modified }),
      )
      .returningAll()
      .executeTakeFirstOrThrow()
    return toOverride(row)
  },

  /** Whether there was one to delete. */
  async remove(db: Executor, namespace: string, identifier: string): Promise<boolean> {
    const result = await db
      .deleteFrom('ratelimit_overrides')
      .where('namespace', '=', namespace)
      .where('identifier', '=', identifier)
      .executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  },
}
