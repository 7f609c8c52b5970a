import { CompiledQuery, type Kysely, PostgresAdapter, type Selectable, sql } from 'kysely'
import type { Db } from './database.js'
import { rowsJson, sqliteLogInsert } from './log-insert.js'
import type { Database } from './schema.js'
import type { VerificationsTable } from './schema-usage.js'

/** A row of the verification log as stored (src/verification/log.ts's VerificationRow + id). */
export interface StoredVerification {
  at: number
  id: string
  account: string
  tokenId: string
  source: string
  outcome: string
  limit: string | null
  ip: string | null
  origin: string | null
  requestId: string | null
  durationUs: number | null
}

/** An account's rows in [from, to) (epoch ms), newest first, after `before` when paging. */
export interface VerificationFilter {
  account: string
  from: number
  to: number
  token?: string
  outcomes?: readonly string[]
  sources?: readonly string[]
  /** The last row of the page before: rows strictly older (by at, then id). */
  before?: { at: number; id: string }
  limit: number
}

const dayMs = 86_400_000
/** Rows per INSERT. */
const insertRows = 1000

const isPostgres = (db: Kysely<Database>) => db.getExecutor().adapter instanceof PostgresAdapter

/** The partition of the day starting at `day` (epoch ms): `verifications_d20261129`. */
export const partitionOf = (day: number) =>
  `verifications_d${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`

/** The days whose partitions this process made or saw, per database. */
const madeDays = new WeakMap<Db, Set<number>>()

/**
 * Makes the partitions of these days (epoch ms of their midnights) unless made. Instances race
 * to make a day's: one wins, the others' "already exists" is the same result.
 */
async function ensurePartitions(db: Db, days: Iterable<number>, fresh = false) {
  let made = madeDays.get(db)
  if (made === undefined || fresh) {
    made = new Set()
    madeDays.set(db, made)
  }
  for (const day of days) {
    if (made.has(day)) continue
    const name = partitionOf(day)
    try {
      await sql
        .raw(
          `create table if not exists ${name} partition of verifications for values from (${day}) to (${day + dayMs})`,
        )
        .execute(db)
    } catch (err) {
      // 42P07 duplicate table, 23505 its type's name: another instance made it meanwhile.
      const code = (err as { code?: string }).code
      if (code !== '42P07' && code !== '23505') throw err
    }
    made.add(day)
  }
}

type Selected = Selectable<VerificationsTable>
const rowOf = (r: Selected): StoredVerification => ({
  at: Number(r.at),
  id: r.id,
  account: r.account,
  tokenId: r.token_id,
  source: r.source,
  outcome: r.outcome,
  limit: r.limit_name,
  ip: r.ip,
  origin: r.origin,
  requestId: r.request_id,
  durationUs: r.duration_us === null ? null : Number(r.duration_us),
})

/**
 * Rows go as one JSON parameter of a constant statement (prepared once, no query to build a
 * batch): compiling a 1,000-row, 11,000-parameter INSERT cost more than the write itself.
 */
async function insertChunk(db: Db, json: string) {
  if (isPostgres(db)) {
    await sql`insert into verifications
        (at, id, account, token_id, source, outcome, limit_name, ip, origin, request_id, duration_us)
      select (r->>0)::bigint, r->>1, r->>2, r->>3, r->>4, r->>5, r->>6, r->>7, r->>8, r->>9,
        (r->>10)::bigint
      from json_array_elements(${json}::json) r`.execute(db)
    return
  }
  await db.executeQuery(CompiledQuery.raw(sqliteLogInsert, [json]))
}

/** 23514: no partition takes a row (one dropped by another instance's retention, or not made). */
const noPartition = (err: unknown) => (err as { code?: string }).code === '23514'

export const verificationsRepo = {
  /** Appends rows, 1,000 to a statement (tests and tools seed with it). */
  async insert(db: Db, rows: readonly StoredVerification[]): Promise<void> {
    for (let i = 0; i < rows.length; i += insertRows) {
      const chunk = rows.slice(i, i + insertRows)
      await this.insertJson(db, rowsJson(chunk), [
        ...new Set(chunk.map((r) => r.at - (r.at % dayMs))),
      ])
    }
  },

  /**
   * Appends a batch written as the insert's JSON parameter (db/log-insert.ts), its days'
   * partitions made first on PostgreSQL.
   */
  async insertJson(db: Db, json: string, days: readonly number[]): Promise<void> {
    const postgres = isPostgres(db)
    if (postgres) await ensurePartitions(db, days)
    try {
      await insertChunk(db, json)
    } catch (err) {
      if (!postgres || !noPartition(err)) throw err
      await ensurePartitions(db, days, true)
      await insertChunk(db, json)
    }
  },

  /** Makes the partitions of today and tomorrow ahead of their rows (PostgreSQL; else nothing). */
  async prepare(db: Db, now: number): Promise<void> {
    if (!isPostgres(db)) return
    const today = now - (now % dayMs)
    await ensurePartitions(db, [today, today + dayMs])
  },

  async list(db: Db, f: VerificationFilter): Promise<StoredVerification[]> {
    let q = db
      .selectFrom('verifications')
      .selectAll()
      .where('account', '=', f.account)
      .where('at', '>=', f.from)
      .where('at', '<', f.to)
    if (f.token !== undefined) q = q.where('token_id', '=', f.token)
    if (f.outcomes !== undefined) q = q.where('outcome', 'in', f.outcomes)
    if (f.sources !== undefined) q = q.where('source', 'in', f.sources)
    const { before } = f
    if (before !== undefined) {
      q = q.where((eb) =>
        eb.or([
          eb('at', '<', before.at),
          eb.and([eb('at', '=', before.at), eb('id', '<', before.id)]),
        ]),
      )
    }
    const rows = await q.orderBy('at', 'desc').orderBy('id', 'desc').limit(f.limit).execute()
    return rows.map((r) => rowOf(r as Selected))
  },

  /**
   * p50 and p99 of `duration_us` per bucket of `bucketMs` in [from, to) (nearest rank), and the
   * rows of each: one statement, window functions on both dialects.
   */
  async latency(
    db: Db,
    q: { account: string; from: number; to: number; bucketMs: number; token?: string },
  ): Promise<{ at: number; count: number; p50: number; p99: number }[]> {
    const token = q.token === undefined ? sql`` : sql`and token_id = ${q.token}`
    // An integer on both dialects (better-sqlite3 binds a JS number as a real: no whole division).
    const ms = sql`cast(${q.bucketMs} as integer)`
    const bucket = sql`(at / ${ms}) * ${ms}`
    const { rows } = await sql<{
      b: string | number
      n: string | number
      p50: string
      p99: string
    }>`
      with ranked as (
        select ${bucket} as b, duration_us as d,
          row_number() over (partition by ${bucket} order by duration_us) as rn,
          count(*) over (partition by ${bucket}) as n
        from verifications
        where account = ${q.account} and at >= ${q.from} and at < ${q.to}
          and duration_us is not null ${token}
      )
      select b, max(n) as n,
        min(case when rn * 100 >= n * 50 then d end) as p50,
        min(case when rn * 100 >= n * 99 then d end) as p99
      from ranked group by b order by b`.execute(db)
    return rows.map((r) => ({
      at: Number(r.b),
      count: Number(r.n),
      p50: Number(r.p50),
      p99: Number(r.p99),
    }))
  },

  /** Adds `n` rows dropped in `minute` (epoch ms) by `instance`. */
  async addDrops(db: Db, minute: number, instance: string, n: number): Promise<void> {
    await db
      .insertInto('verification_drops')
      .values({ minute, instance, dropped: n })
      .onConflict((oc) =>
        oc
          .columns(['minute', 'instance'])
          .doUpdateSet({ dropped: sql`verification_drops.dropped + excluded.dropped` }),
      )
      .execute()
  },

  /** Rows dropped by every instance in the minutes of [from, to). */
  async drops(db: Db, from: number, to: number): Promise<number> {
    const start = from - (from % 60_000)
    const row = await db
      .selectFrom('verification_drops')
      .select((eb) => eb.fn.sum<string | number | null>('dropped').as('n'))
      .where('minute', '>=', start)
      .where('minute', '<', to)
      .executeTakeFirst()
    return Number(row?.n ?? 0)
  },

  /**
   * Removes rows before `cutoff` (epoch ms): on PostgreSQL the partitions of days wholly before
   * it are dropped (never row by row); on SQLite rows go in steps of `step`, the event loop
   * free between them. Returns the rows (SQLite) or partitions (PostgreSQL) removed.
   */
  async prune(db: Db, cutoff: number, step = 5000): Promise<number> {
    await db.deleteFrom('verification_drops').where('minute', '<', cutoff).execute()
    if (isPostgres(db)) return dropPartitions(db, cutoff)
    // Account by account (a skip-scan of the index that leads with it: no index by `at` alone
    // is kept up for retention's sake), in steps that leave the event loop between them.
    const { rows: accounts } = await sql<{ account: string }>`
      with recursive a(account) as (
        select min(account) from verifications
        union all
        select (select min(account) from verifications where account > a.account) from a
        where a.account is not null)
      select account from a where account is not null`.execute(db)
    let removed = 0
    for (const { account } of accounts) {
      for (;;) {
        const { numAffectedRows } = await sql`
          delete from verifications where rowid in (select rowid from verifications
            where account = ${account} and at < ${cutoff} limit ${step})`.execute(db)
        const n = Number(numAffectedRows ?? 0)
        removed += n
        if (n < step) break
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    return removed
  },

  /** The day partitions there are (PostgreSQL), by name. */
  async partitions(db: Db): Promise<string[]> {
    const { rows } = await sql<{ name: string }>`
      select c.relname as name from pg_inherits i
      join pg_class c on c.oid = i.inhrelid
      join pg_class p on p.oid = i.inhparent
      join pg_namespace n on n.oid = p.relnamespace
      where p.relname = 'verifications' and n.nspname = current_schema()
      order by c.relname`.execute(db)
    return rows.map((r) => r.name)
  },
}

/** Drops the day partitions that end at or before `cutoff`. */
async function dropPartitions(db: Db, cutoff: number): Promise<number> {
  const last = cutoff - (cutoff % dayMs) - dayMs
  let dropped = 0
  for (const name of await verificationsRepo.partitions(db)) {
    const m = /^verifications_d(\d{4})(\d{2})(\d{2})$/.exec(name)
    if (m === null) continue
    const day = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))
    if (day > last) continue
    await sql.raw(`drop table if exists ${name}`).execute(db)
    madeDays.get(db)?.delete(day)
    dropped++
  }
  return dropped
}
