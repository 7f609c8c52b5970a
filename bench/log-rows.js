// `npm run bench:log-rows`: what the verification log stores and how fast a database takes it,
// for docs/capacity.md ("The verification log"). Writes BENCH_LOG_ROWS rows (200,000) through
// the server's own insert (verificationsRepo.insert, batches of 1,000) as fast as one writer
// can, rows like a busy fleet's (1,000 accounts, 10,000 tokens, mostly valid, an origin on a
// third, a request id on each), then measures bytes per row with the table packed: SQLite
// `VACUUM` and `dbstat`; PostgreSQL (DATABASE_URL, a schema of its own, dropped after) `VACUUM
// FULL` and the partitions' `pg_total_relation_size`. Prints rows/s and bytes a row.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'

const root = path.resolve(import.meta.dirname, '..')
const { createDatabase, migrateToLatest } = await import(`${root}/dist/src/db/database.js`)
const { verificationsRepo } = await import(`${root}/dist/src/db/verifications.js`)

const total = Number(process.env.BENCH_LOG_ROWS ?? 200_000)
const batch = 1000
const t0 = Date.parse('2026-11-22T12:00:00.000Z')
const outcomes = ['valid', 'valid', 'valid', 'valid', 'valid', 'valid', 'revoked', 'rate_limited']

const rowOf = (i) => {
  const outcome = outcomes[i % outcomes.length]
  return {
    at: t0 + Math.floor(i / 10),
    id: `bench000${i.toString(36).padStart(11, '0')}`,
    account: `account-${String(i % 1000).padStart(4, '0')}`,
    tokenId: `c${String(i % 10_000).padStart(24, '0')}`,
    source: i % 5 === 0 ? 'api' : 'retrieve',
    outcome,
    limit: outcome === 'rate_limited' ? 'requests' : null,
    ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    origin: i % 3 === 0 ? 'maps.example.com' : null,
    requestId: `a1b2c3d4-${(i + 1).toString(36)}`,
    durationUs: 40 + (i % 200),
  }
}

/** Inserts every row, batch after batch; rows a second. */
async function fill(db) {
  const start = performance.now()
  for (let i = 0; i < total; i += batch) {
    const rows = []
    for (let j = i; j < Math.min(total, i + batch); j++) rows.push(rowOf(j))
    await verificationsRepo.insert(db, rows)
  }
  return (total * 1000) / (performance.now() - start)
}

const print = (name, rate, bytes) =>
  console.log(
    `${name}: ${total} rows at ${rate.toFixed(0)} rows/s (one writer, batches of ${batch}); ` +
      `${bytes} bytes with indexes, ${(bytes / total).toFixed(0)} bytes a row`,
  )

async function sqlite() {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-log-rows-'))
  const config = { kind: 'sqlite', file: path.join(dir, 'log.db') }
  const db = createDatabase(config)
  try {
    await migrateToLatest(db, config)
    const rate = await fill(db)
    await sql`pragma wal_checkpoint(truncate)`.execute(db)
    await sql`vacuum`.execute(db)
    const pages = await sql`select name, sum(pgsize) as bytes from dbstat group by name`.execute(db)
    const bytes = pages.rows
      .filter((r) => r.name === 'verifications' || r.name.startsWith('verifications_'))
      .reduce((sum, r) => sum + Number(r.bytes), 0)
    print('SQLite', rate, bytes)
  } finally {
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function postgres(url) {
  const schema = `log_rows_${process.pid}`
  const config = { kind: 'postgres', url, poolSize: 4, schema }
  const admin = createDatabase({ kind: 'postgres', url, poolSize: 1 })
  await sql`create schema ${sql.id(schema)}`.execute(admin)
  const db = createDatabase(config)
  try {
    await migrateToLatest(db, config)
    const rate = await fill(db)
    await sql`vacuum full analyze`.execute(db)
    let bytes = 0
    for (const name of await verificationsRepo.partitions(db)) {
      const b =
        await sql`select pg_total_relation_size(${`${schema}.${name}`}::regclass) as b`.execute(db)
      bytes += Number(b.rows[0].b)
    }
    print('PostgreSQL', rate, bytes)
  } finally {
    await db.destroy()
    await sql`drop schema ${sql.id(schema)} cascade`.execute(admin)
    await admin.destroy()
  }
}

await sqlite()
if (process.env.DATABASE_URL) await postgres(process.env.DATABASE_URL)
else console.log('(DATABASE_URL unset: PostgreSQL not measured)')
