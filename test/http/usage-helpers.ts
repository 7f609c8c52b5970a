import type { Db } from '../../src/db/database.js'
import { outcomes } from '../../src/usage/outcomes.js'

export type UsageTable = 'usage_minutes' | 'usage_hours' | 'usage_days'

/** A table's rows as `account/token at: {outcome: n}`, outcomes at 0 left out, sorted. */
export async function usageRows(db: Db, table: UsageTable): Promise<Record<string, object>> {
  const rows = await db.selectFrom(table).selectAll().execute()
  const out: [string, object][] = rows.map((r) => {
    const counts: Record<string, number> = {}
    for (const o of outcomes) if (Number(r[o]) !== 0) counts[o] = Number(r[o])
    return [`${r.account}/${r.token_id} ${r.at}`, counts]
  })
  return Object.fromEntries(out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}
