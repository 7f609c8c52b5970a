import { mkdirSync } from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import type { Config } from '../config.js'
import { migrationProvider } from './migrations/index.js'
import type { Database } from './schema.js'

export type Db = Kysely<Database>

export function createDatabase(config: Config['db']): Db {
  if (config.kind === 'postgres') {
    const pool = new pg.Pool({
      connectionString: config.url,
      max: config.poolSize,
      connectionTimeoutMillis: 3000,
    })
    // An idle client's error (the server went away) must not crash the process.
    pool.on('error', () => {})
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  }
  if (config.file !== ':memory:') mkdirSync(path.dirname(config.file), { recursive: true })
  const sqlite = new SQLite(config.file)
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('synchronous = NORMAL')
  sqlite.pragma('foreign_keys = ON')
  // The CLI may write while the server runs on the same file.
  sqlite.pragma('busy_timeout = 5000')
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) })
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
