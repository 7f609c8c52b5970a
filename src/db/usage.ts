import { type Kysely, sql } from 'kysely'
import { powerOfTwoRuns } from './compiled.js'
import type { Database } from './schema.js'

type Executor = Kysely<Database>

export interface UsageBatch {
  /** `YYYY-MM-DDTHH`: the hour every count of the batch fell in. */
  hour: string
  /** Per token: validations in that hour, and the minute of the last one (ISO). */
  counts: Map<string, { count: number; minute: string }>
}

export interface TokenActivity {
  lastUsed?: string
  /** Validations per hour, oldest first, hours without any left out. */
  hours: { hour: string; count: number }[]
}

export const usageRepo = {
  /**
   * Adds one instance's counts: upserts that add, so that every instance's counts sum up, and a
   * last use that only moves forward. A statement per table and run of ids (runs of powers of
   * two, see `powerOfTwoRuns`), all in one transaction: a failed batch is retried whole, never
   * counted twice. Ids in order, so that two instances lock the same rows in the same order.
   */
  async add(db: Executor, batch: UsageBatch): Promise<void> {
    if (batch.counts.size === 0) return
    const runs = powerOfTwoRuns([...batch.counts.keys()].sort())
    const write = async (trx: Executor) => {
      for (const ids of runs) await addRun(trx, batch, ids)
    }
    if (db.isTransaction) await write(db)
    else await db.transaction().execute(write)
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

  async activity(db: Executor, id: string, sinceHour: string): Promise<TokenActivity> {
    const rows = await db
      .selectFrom('token_usage')
      .select(['hour', 'count'])
      .where('token_id', '=', id)
      .where('hour', '>=', sinceHour)
      .orderBy('hour')
      .execute()
    const last = await usageRepo.lastUsed(db, [id])
    const activity: TokenActivity = {
      hours: rows.map((r) => ({ hour: r.hour, count: Number(r.count) })),
    }
    const lastUsed = last.get(id)
    if (lastUsed !== undefined) activity.lastUsed = lastUsed
    return activity
  },

  /** Hours before `beforeHour` go; so do the rows of tokens that no longer exist. */
  async prune(db: Executor, beforeHour: string): Promise<void> {
    await db.deleteFrom('token_usage').where('hour', '<', beforeHour).execute()
    await db
      .deleteFrom('token_usage')
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('tokens').select('id').whereRef('tokens.id', '=', 'token_usage.token_id'),
          ),
        ),
      )
      .execute()
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

async function addRun(db: Executor, batch: UsageBatch, ids: string[]): Promise<void> {
  await db
    .insertInto('token_usage')
    .values(
      ids.map((id) => ({
        token_id: id,
        hour: batch.hour,
        count: batch.counts.get(id)?.count ?? 0,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['token_id', 'hour']).doUpdateSet({
        count: sql`token_usage.count + excluded.count`,
      }),
    )
    .execute()
  await db
    .insertInto('token_last_used')
    .values(ids.map((id) => ({ token_id: id, at: batch.counts.get(id)?.minute ?? '' })))
    .onConflict((oc) =>
      oc.column('token_id').doUpdateSet({
        at: sql`case when excluded.at > token_last_used.at then excluded.at else token_last_used.at end`,
      }),
    )
    .execute()
}
