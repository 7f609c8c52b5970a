import { type Kysely, sql } from 'kysely'
import { powerOfTwoRuns } from './compiled.js'
import type { Database } from './schema.js'

type Executor = Kysely<Database>

/** `rate_limited` by limit name, as many counts as there are names (migration 0019). */
export type LimitedCounts = Readonly<Record<string, number>>

/** The tables of the split, beside `usageTables`: the same buckets, their key's length. */
export const limitedTables = [
  ['usage_limited_minutes', 16],
  ['usage_limited_hours', 13],
  ['usage_limited_days', 10],
] as const

type LimitedTableName = (typeof limitedTables)[number][0]
type Resolution = 'minute' | 'hour' | 'day'

const tableOf: Record<Resolution, LimitedTableName> = {
  minute: 'usage_limited_minutes',
  hour: 'usage_limited_hours',
  day: 'usage_limited_days',
}

/** A minute's split of one (account, token): what `usageRepo.add` writes beside its counts. */
export interface LimitedRow {
  minute: string
  account: string
  tokenId: string
  limited?: LimitedCounts
}

interface Cell {
  account: string
  at: string
  token_id: string
  name: string
  count: number
}

/**
 * Adds each row's split to the minute, hour and day tables: upserts that add, in key order (so
 * that two instances lock the same rows in the same order), in runs of powers of two. Runs in
 * the caller's transaction, the one that adds the rows' `rate_limited`.
 */
export async function addLimited(db: Executor, rows: readonly LimitedRow[]): Promise<void> {
  if (!rows.some((r) => r.limited !== undefined)) return
  for (const [table, width] of limitedTables) {
    const cells = new Map<string, Cell>()
    for (const row of rows) {
      const at = row.minute.slice(0, width)
      for (const [name, n] of Object.entries(row.limited ?? {})) {
        if (n === 0) continue
        const key = `${row.account}\u0000${at}\u0000${row.tokenId}\u0000${name}`
        const cell = cells.get(key)
        if (cell === undefined) {
          cells.set(key, { account: row.account, at, token_id: row.tokenId, name, count: n })
        } else cell.count += n
      }
    }
    const sorted = [...cells.keys()].sort().map((k) => cells.get(k) as Cell)
    for (const run of powerOfTwoRuns(sorted)) {
      // The three tables have one shape: typed as one of them.
      await db
        .insertInto(table as 'usage_limited_minutes')
        .values(run)
        .onConflict((oc) =>
          oc
            .columns(['account', 'at', 'token_id', 'name'])
            .doUpdateSet({ count: sql`${sql.ref(`${table}.count`)} + excluded.count` }),
        )
        .execute()
    }
  }
}

/** Each table's buckets before its cutoff, as `usageRepo.prune` does the `usage_*` tables'. */
export async function pruneLimited(
  db: Executor,
  before: { minute: string; hour: string; day: string },
): Promise<void> {
  const cutoff = { minute: before.minute, hour: before.hour, day: before.day }
  for (const resolution of ['minute', 'hour', 'day'] as const) {
    await db.deleteFrom(tableOf[resolution]).where('at', '<', cutoff[resolution]).execute()
  }
}

interface Range {
  resolution: Resolution
  account: string
  /** Bucket keys: `fromAt <= at < toAt`. */
  fromAt: string
  toAt: string
  token?: string
}

/** A split read back: the bucket or token it belongs to, a name and its sum. */
export interface LimitedSum {
  at: string
  tokenId: string
  name: string
  count: number
}

/** Reads of the split: sums by name, over a range or at given buckets, by bucket or token. */
export const limitedReads = {
  /**
   * Sums by name over the range, by bucket (`at`) and token as asked; `ats`: only those
   * buckets. Names in order, so that an answer's object lists them alike each time.
   */
  async sums(
    db: Executor,
    q: Range & { by: 'at' | 'token' | 'none'; ats?: readonly string[] },
  ): Promise<LimitedSum[]> {
    const table = tableOf[q.resolution] as 'usage_limited_minutes'
    let query = db
      .selectFrom(table)
      .select(['name', sql<string>`sum(${sql.ref('count')})`.as('count')])
      .where('account', '=', q.account)
      .where('at', '>=', q.fromAt)
      .where('at', '<', q.toAt)
      .groupBy('name')
      .orderBy('name')
    if (q.token !== undefined) query = query.where('token_id', '=', q.token)
    if (q.ats !== undefined) query = query.where('at', 'in', q.ats)
    if (q.by === 'at') {
      const rows = await query.select('at').groupBy('at').execute()
      return rows.map((r) => ({ at: r.at, tokenId: '', name: r.name, count: Number(r.count) }))
    }
    if (q.by === 'token') {
      const rows = await query.select('token_id').groupBy('token_id').execute()
      return rows.map((r) => ({
        at: '',
        tokenId: r.token_id,
        name: r.name,
        count: Number(r.count),
      }))
    }
    const rows = await query.execute()
    return rows.map((r) => ({ at: '', tokenId: '', name: r.name, count: Number(r.count) }))
  },
}
