// `npm run bench:usage`: what metering stores, for docs/capacity.md ("Usage metering: rows and
// bytes"). Writes 10 minutes of 10^4 active tokens (over 1,000 accounts; valid counts, now and
// then a refusal) through the server's own flush code (usageRepo.add: the minute rows, and the
// same counts added to the hour and day rows and to last use), then measures bytes per row with
// the tables packed: SQLite `VACUUM` and the `dbstat` table; PostgreSQL (DATABASE_URL, in a
// schema of its own, dropped after) `VACUUM FULL` and `pg_total_relation_size`. Prints the mean
// flush time and a table per database.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'

const root = path.resolve(import.meta.dirname, '..')
const { createDatabase, migrateToLatest } = await import(`${root}/dist/src/db/database.js`)
const { usageRepo } = await import(`${root}/dist/src/db/usage.js`)

const minutes = 10
const tokens = Array.from({ length: 10_000 }, (_, i) => ({
  account: `account-${String(i % 1000).padStart(4, '0')}`,
  tokenId: `c${String(i).padStart(24, '0')}`,
}))
const rowsOf = (m) =>
  tokens.map((t, i) => ({
    minute: `2026-11-22T12:${String(m).padStart(2, '0')}`,
    ...t,
    counts: [1000 + i, i % 7 === 0 ? 3 : 0, 0, 0, i % 11 === 0 ? 1 : 0, 0, 0, 0, 0, 0],
  }))
const tables = ['usage_minutes', 'usage_hours', 'usage_days', 'token_last_used']

/** Writes the minutes, one flush each; the mean flush in ms. */
async function fill(db) {
  const start = performance.now()
  for (let m = 0; m < minutes; m++) await usageRepo.add(db, rowsOf(m))
  return (performance.now() - start) / minutes
}

function print(name, flushMs, sizes) {
  console.log(
    `\n${name}: a flush of ${tokens.length} keys (minute, hour, day, last use) took ${flushMs.toFixed(0)} ms`,
  )
  console.log('| table, with its indexes | rows | bytes | bytes a row |')
  console.log('| --- | ---: | ---: | ---: |')
  for (const { table, rows, bytes } of sizes) {
    console.log(`| ${table} | ${rows} | ${bytes} | ${(bytes / rows).toFixed(0)} |`)
  }
}

const count = async (db, table) =>
  Number((await sql`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0].n)

async function sqlite() {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-usage-rows-'))
  const config = { kind: 'sqlite', file: path.join(dir, 'usage.db') }
  const db = createDatabase(config)
  try {
    await migrateToLatest(db, config)
    const flushMs = await fill(db)
    await sql`pragma wal_checkpoint(truncate)`.execute(db)
    await sql`vacuum`.execute(db)
    const pages = await sql`select name, sum(pgsize) as bytes from dbstat group by name`.execute(db)
    const bytesOf = (table) =>
      pages.rows
        .filter(
          (r) =>
            r.name === table ||
            r.name.startsWith(`${table}_`) ||
            r.name === `sqlite_autoindex_${table}_1`,
        )
        .reduce((sum, r) => sum + Number(r.bytes), 0)
    const sizes = []
    for (const table of tables)
      sizes.push({ table, rows: await count(db, table), bytes: bytesOf(table) })
    print('SQLite', flushMs, sizes)
  } finally {
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function postgres(url) {
  const schema = `usage_rows_${process.pid}`
  const config = { kind: 'postgres', url, poolSize: 4, schema }
  const admin = createDatabase({ kind: 'postgres', url, poolSize: 1 })
  await sql`create schema ${sql.id(schema)}`.execute(admin)
  const db = createDatabase(config)
  try {
    await migrateToLatest(db, config)
    const flushMs = await fill(db)
    await sql`vacuum full analyze`.execute(db)
    const sizes = []
    for (const table of tables) {
      const name = `${schema}.${table}`
      const bytes = (await sql`select pg_total_relation_size(${name}::regclass) as b`.execute(db))
        .rows[0].b
      sizes.push({ table, rows: await count(db, table), bytes: Number(bytes) })
    }
    print('PostgreSQL', flushMs, sizes)
  } finally {
    await db.destroy()
    await sql`drop schema ${sql.id(schema)} cascade`.execute(admin)
    await admin.destroy()
  }
}

await sqlite()
if (process.env.DATABASE_URL) await postgres(process.env.DATABASE_URL)
else console.log('\n(DATABASE_URL unset: PostgreSQL not measured)')
