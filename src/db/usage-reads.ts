import { type Kysely, sql } from 'kysely'
import type { Database } from './schema.js'
import { outcomeColumns, type UsageTableName } from './usage.js'

type Executor = Kysely<Database>

export type Resolution = 'minute' | 'hour' | 'day'

const tableOf: Record<Resolution, UsageTableName> = {
  minute: 'usage_minutes',
  hour: 'usage_hours',
  day: 'usage_days',
}

interface Range {
  resolution: Resolution
  account: string
  /** Bucket keys: `fromAt <= at < toAt`. */
  fromAt: string
  toAt: string
  token?: string
}

type Sums = Record<(typeof outcomeColumns)[number], string | number | bigint | null>

const countsOf = (row: Sums) => outcomeColumns.map((c) => Number(row[c] ?? 0))

/** The account's rows of a resolution in the range, summed by outcome column. */
function summed(db: Executor, q: Range) {
  const table = tableOf[q.resolution] as 'usage_minutes'
  let query = db
    .selectFrom(table)
    .select(outcomeColumns.map((c) => sql<string>`sum(${sql.ref(c)})`.as(c)))
    .where('account', '=', q.account)
    .where('at', '>=', q.fromAt)
    .where('at', '<', q.toAt)
  if (q.token !== undefined) query = query.where('token_id', '=', q.token)
  return query
}

/** Reads of the `usage_*` tables: sums over buckets, by bucket or by token. */
export const usageReads = {
  async series(
    db: Executor,
    q: Range & { after?: string; limit: number },
  ): Promise<{ at: string; counts: number[] }[]> {
    let query = summed(db, q).select('at').groupBy('at').orderBy('at').limit(q.limit)
    if (q.after !== undefined) query = query.where('at', '>', q.after)
    const rows = await query.execute()
    return rows.map((r) => ({ at: r.at, counts: countsOf(r as Sums) }))
  },

  async totals(db: Executor, q: Range): Promise<number[]> {
    const row = await summed(db, q).executeTakeFirst()
    return row === undefined ? countsOf({} as Sums) : countsOf(row as Sums)
  },

  async byToken(db: Executor, q: Range): Promise<{ tokenId: string; counts: number[] }[]> {
    const rows = await summed(db, q).select('token_id').groupBy('token_id').execute()
    return rows.map((r) => ({ tokenId: r.token_id, counts: countsOf(r as Sums) }))
  },
}
