import { type Kysely, sql } from 'kysely'
import { powerOfTwoRuns } from './compiled.js'
import type { Database } from './schema.js'
import { addLimited, type LimitedCounts, pruneLimited } from './usage-limited.js'

type Executor = Kysely<Database>

/** The outcome columns of the `usage_*` tables, in the order of a counts array (0013). */
export const outcomeColumns = [
  'valid',
  'malformed',
  'invalid',
  'expired',
  'revoked',
  'rate_limited',
  'url_not_allowed',
  'ip_not_allowed',
  'scope_missing',
  'credits_exhausted',
] as const

export const usageTables = [
  ['usage_minutes', 16],
  ['usage_hours', 13],
  ['usage_days', 10],
] as const

export type UsageTableName = (typeof usageTables)[number][0]

/** Counts of one account and token in one minute (`YYYY-MM-DDTHH:MM`), by outcome column. */
export interface MinuteRow {
  minute: string
  account: string
  tokenId: string
  counts: readonly number[]
  /** `rate_limited` by limit name, where any: at most `counts`' rate_limited (0019). */
  limited?: LimitedCounts
}

export interface TokenActivity {
  lastUsed?: string
  /** Valid validations per hour, oldest first, hours without any left out. */
  hours: { hour: string; count: number }[]
}

interface Cell {
  account: string
  at: string
  tokenId: string
  counts: number[]
}

const addInto = (cells: Map<string, Cell>, row: MinuteRow, width: number) => {
  const at = row.minute.slice(0, width)
  const key = `${row.account}\u0000${at}\u0000${row.tokenId}`
  const cell = cells.get(key)
  if (cell === undefined) {
    cells.set(key, { account: row.account, at, tokenId: row.tokenId, counts: [...row.counts] })
  } else for (const [i, n] of row.counts.entries()) cell.counts[i] = (cell.counts[i] ?? 0) + n
}

const anyCount = (row: MinuteRow) => row.counts.some((n) => n !== 0)

export const usageRepo = {
  /**
   * Adds counts to the minute, hour and day rows (and their split by limit name), and moves the
   * last use of tokens with valid counts forward: upserts that add, so that every instance's
   * counts sum up. One statement per table and run of rows (runs of powers of two, see
   * `powerOfTwoRuns`), all in one transaction: a failed write is retried whole, never counted
   * twice. Rows in key order, so that two instances lock the same rows in the same order.
   */
  async add(db: Executor, rows: readonly MinuteRow[]): Promise<void> {
    const counted = rows.filter(anyCount)
    if (counted.length === 0) return
    const write = async (trx: Executor) => {
      for (const [table, width] of usageTables) {
        const cells = new Map<string, Cell>()
        for (const row of counted) addInto(cells, row, width)
        const sorted = [...cells.keys()].sort().map((k) => cells.get(k) as Cell)
        for (const run of powerOfTwoRuns(sorted)) await addRun(trx, table, run)
      }
      await addLimited(trx, counted)
      await touch(trx, counted)
    }
    if (db.isTransaction) await write(db)
    else await db.transaction().execute(write)
  },

  /**
   * A verifier's batch: its counts added as `add` does, in one transaction with the batch's
   * (reporter, batch) row and `within`. False, with nothing written, when that batch is there.
   */
  async record(
    db: Executor,
    rows: readonly MinuteRow[],
    report: { reporter: string; batch: string; received: string } | undefined,
    within?: (trx: Executor) => Promise<void>,
  ): Promise<boolean> {
    return db.transaction().execute(async (trx) => {
      if (report !== undefined) {
        const inserted = await trx
          .insertInto('usage_reports')
          .values(report)
          .onConflict((oc) => oc.columns(['reporter', 'batch']).doNothing())
          .executeTakeFirst()
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return false
      }
      await usageRepo.add(trx, rows)
      if (within !== undefined) await within(trx)
      return true
    })
  },

  async lastUsed(db: Executor, ids: string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>()
    for (const run of powerOfTwoRuns(ids)) {
      const rows = await db
        .selectFrom('token_last_used')
        .select(['token_id', 'at'])
        .where('token_id', 'in', run)
        .execute()
      for (const r of rows) found.set(r.token_id, r.at)
    }
    return found
  },

  /** A token's valid validations per hour since `sinceHour` and the account's creation, and its
   * last use. The account (the primary key's first column) is read from the token when not given. */
  async activity(
    db: Executor,
    id: string,
    sinceHour: string,
    account?: string,
  ): Promise<TokenActivity> {
    const owner =
      account ??
      (await db.selectFrom('tokens').select('username').where('id', '=', id).executeTakeFirst())
        ?.username
    const rows =
      owner === undefined
        ? []
        : await db
            .selectFrom('usage_hours')
            .select(['at', 'valid'])
            .where('account', '=', owner)
            .where('at', '>=', sinceHour)
            // Not the hours of a former account of the same name (docs/metering.md).
            .where('at', '>=', (eb) =>
              eb
                .selectFrom('accounts')
                .select(sql<string>`substr(created, 1, 13)`.as('hour'))
                .where('username', '=', owner),
            )
            .where('token_id', '=', id)
            .where('valid', '>', 0)
            .orderBy('at')
            .execute()
    const activity: TokenActivity = {
      hours: rows.map((r) => ({ hour: r.at, count: Number(r.valid) })),
    }
    const lastUsed = (await usageRepo.lastUsed(db, [id])).get(id)
    if (lastUsed !== undefined) activity.lastUsed = lastUsed
    return activity
  },

  /**
   * Each table's buckets before its cutoff (a key: `at` compares as text) and reports received
   * before `reports`: by retention only. The rows of deleted tokens stay (their counts are the
   * account's history, and a deleted pk/sk is what `revoked` counts); their last use goes.
   */
  async prune(
    db: Executor,
    before: { minute: string; hour: string; day: string; reports: string },
  ): Promise<void> {
    const cutoff = {
      usage_minutes: before.minute,
      usage_hours: before.hour,
      usage_days: before.day,
    }
    for (const [table] of usageTables) {
      await db.deleteFrom(table).where('at', '<', cutoff[table]).execute()
    }
    await pruneLimited(db, before)
    await db.deleteFrom('usage_reports').where('received', '<', before.reports).execute()
    await db
      .deleteFrom('token_last_used')
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('tokens')
              .select('id')
              .whereRef('tokens.id', '=', 'token_last_used.token_id'),
          ),
        ),
      )
      .execute()
  },
}

async function addRun(db: Executor, table: UsageTableName, cells: Cell[]): Promise<void> {
  // The three tables have one shape: typed as one of them.
  const t = table as 'usage_minutes'
  const values = cells.map((c) => {
    const row: Record<string, string | number> = {
      account: c.account,
      at: c.at,
      token_id: c.tokenId,
    }
    for (const [i, column] of outcomeColumns.entries()) row[column] = c.counts[i] ?? 0
    return row as { account: string; at: string; token_id: string }
  })
  const added = Object.fromEntries(
    outcomeColumns.map((c) => [
      c,
      sql<number>`${sql.ref(`${table}.${c}`)} + excluded.${sql.ref(c)}`,
    ]),
  )
  await db
    .insertInto(t)
    .values(values)
    .onConflict((oc) => oc.columns(['account', 'at', 'token_id']).doUpdateSet(added))
    .execute()
}

/** The last use (the minute's start, ISO) of every token with valid counts, only forward. */
async function touch(db: Executor, rows: readonly MinuteRow[]): Promise<void> {
  const last = new Map<string, string>()
  for (const r of rows) {
    if (r.tokenId === '' || (r.counts[0] ?? 0) === 0) continue
    const seen = last.get(r.tokenId)
    if (seen === undefined || seen < r.minute) last.set(r.tokenId, r.minute)
  }
  for (const ids of powerOfTwoRuns([...last.keys()].sort())) {
    await db
      .insertInto('token_last_used')
      .values(ids.map((id) => ({ token_id: id, at: `${last.get(id)}:00.000Z` })))
      .onConflict((oc) =>
        oc.column('token_id').doUpdateSet({
          at: sql`case when excluded.at > token_last_used.at then excluded.at else token_last_used.at end`,
        }),
      )
      .execute()
  }
}
