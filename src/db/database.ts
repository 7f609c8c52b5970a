import { mkdirSync } from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, Migrator, PostgresDialect, type SqliteDatabase, SqliteDialect, sql } from 'kysely'
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
      // Fail fast when the database is away: a request gets 503 in seconds, never hangs.
      connectionTimeoutMillis: 3000,
      query_timeout: 5000,
      ...(config.schema ? { options: `-c search_path=${config.schema}` } : {}),
    })
    // An idle client's error (the server went away) must not crash the process; the pool drops
    // that client and the next query connects afresh.
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
  return new Kysely<Database>({
    dialect: new SqliteDialect({ database: reusingStatements(sqlite) }),
  })
}

/**
 * Kysely prepares every query afresh; preparing costs more than running a point query. Keep
 * the prepared statements by SQL text (a bounded set: the repositories' queries).
 */
function reusingStatements(sqlite: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>()
  return {
    prepare(text: string) {
      let statement = statements.get(text)
      if (statement === undefined) {
        statement = sqlite.prepare(text)
        if (statements.size < 256) statements.set(text, statement)
      }
      return statement
    },
    close: () => sqlite.close(),
  }
}

/**
 * Applies pending migrations. On PostgreSQL, Kysely's migrator holds an advisory lock, so
 * instances starting together apply each migration once.
 */
export async function migrateToLatest(db: Db, config: Config['db']): Promise<string[]> {
  if (config.kind === 'postgres' && config.schema) {
    try {
      await sql`create schema if not exists ${sql.id(config.schema)}`.execute(db)
    } catch (err) {
      // Two instances creating the schema at once: the loser sees a duplicate; it exists now.
      if (!['23505', '42P06'].includes((err as { code?: string }).code ?? '')) throw err
    }
  }
  const migrator = new Migrator({ db, provider: migrationProvider })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

const unavailableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'SQLITE_BUSY',
  '53300', // too many connections
  '57P01', // admin shutdown
  '57P02', // crash shutdown
  '57P03', // cannot connect now
])

/** True for failures that mean "the database is not reachable now", not "this query is wrong". */
export function isUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false
  const { code, message } = err as { code?: unknown; message?: unknown }
  if (typeof code === 'string' && (unavailableCodes.has(code) || code.startsWith('08'))) return true
  return (
    typeof message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error/.test(
      message,
    )
  )
}
