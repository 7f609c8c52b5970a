import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import {
  type DatabaseIntrospector,
  Kysely,
  Migrator,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type SqliteDatabase,
  SqliteDialect,
  sql,
} from 'kysely'
import pg from 'pg'
import type { Config } from '../config.js'
import { migrationProvider } from './migrations/index.js'
import { PipelinedStatement } from './pipeline.js'
import type { Database } from './schema.js'

export type Db = Kysely<Database>

/** Each PostgreSQL database's pipelined statements, by SQL text (see pipelined). */
const pipelines = new WeakMap<Db, (text: string) => PipelinedStatement>()

/**
 * The statement of this SQL text pipelined on a connection of its own (see PipelinedStatement),
 * on PostgreSQL; undefined on SQLite. A bounded set of texts: each has its connection.
 */
export function pipelined(db: Db, text: string): PipelinedStatement | undefined {
  return pipelines.get(db)?.(text)
}

export function createDatabase(config: Config['db']): Db {
  if (config.kind === 'postgres') {
    const clientConfig = {
      connectionString: config.url,
      // Fail fast when the database is away: a request gets 503 in seconds, never hangs.
      connectionTimeoutMillis: 3000,
      query_timeout: 5000,
      ...(config.schema ? { options: `-c search_path=${config.schema}` } : {}),
    }
    // Creates are pipelined on a connection of their own, one of the pool size's (see
    // pipelined); with a pool of one, they take turns on the pool's connection.
    const piped = config.poolSize >= 2
    const pool = new pg.Pool({ ...clientConfig, max: piped ? config.poolSize - 1 : 1 })
    const statements = new Map<string, PipelinedStatement>()
    // A client's error (the server went away) must not crash the process. Idle, the pool drops
    // that client and says so here; checked out, pg-pool takes its own listener off and the
    // client emits the error with no one listening (the process dies): each client gets one for
    // its life. The query in flight fails with the error (503), and the pool drops a client
    // that can no longer query when it is released.
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', () => {}))
    const end = async () => {
      await Promise.all([...statements.values()].map((s) => s.end()))
      await pool.end()
    }
    const db = new Kysely<Database>({
      dialect: new OwnSchemaDialect({ pool: preparingStatements(pool, end) }),
    })
    if (piped)
      pipelines.set(db, (text) => {
        let statement = statements.get(text)
        if (statement === undefined) {
          statement = new PipelinedStatement(clientConfig, `tessera_p${statements.size}`, text)
          statements.set(text, statement)
        }
        return statement
      })
    return db
  }
  if (config.file !== ':memory:') createPrivately(config.file)
  const sqlite = new SQLite(config.file)
  try {
    // The CLI may write while the server runs on the same file; first, so that the pragmas below
    // wait out a writer too. Through exec, not pragma(): pragma() prepares a statement and drops
    // it (see keptForever).
    sqlite.exec('pragma busy_timeout = 5000')
    sqlite.exec('pragma journal_mode = WAL')
    sqlite.exec('pragma synchronous = NORMAL')
    // Checkpoint every ~40 MB of WAL rather than every 4 MB: a third off the cost of a commit
    // (creates) on a large table, for a larger WAL file on disk.
    sqlite.exec('pragma wal_autocheckpoint = 10000')
    sqlite.exec('pragma foreign_keys = ON')
  } catch (err) {
    // Not a database, or locked: the error is the caller's to report, the object never garbage.
    if (sqliteObjectsMustLive) keptForever.push(sqlite)
    sqlite.close()
    throw err
  }
  return new Kysely<Database>({
    dialect: new SqliteDialect({ database: reusingStatements(sqlite) }),
  })
}

/**
 * PostgreSQL, with an introspector that sees the current schema alone. Kysely's lists every
 * table of every schema with a function call per column (`pg_get_serial_sequence`), which fails
 * ("schema … does not exist", "column … does not exist") when another schema is dropped or
 * altered while it runs: deployments and test runs sharing a database do that, and the migrator
 * introspects at every start. The migrator only asks which tables exist, so the tables come
 * without their columns (`columns` is empty), and Kysely's own tables are listed whatever
 * `withInternalKyselyTables` says: a caller that needs either must not use `db.introspection`.
 */
class OwnSchemaDialect extends PostgresDialect {
  // biome-ignore lint/suspicious/noExplicitAny: Kysely's own signature
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    const kysely = super.createIntrospector(db)
    const getTables = async () => {
      const { rows } = await sql<{ name: string; schema: string; isView: boolean }>`
        select c.relname as name, n.nspname as schema, c.relkind = 'v' as "isView"
        from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p')
        order by c.relname`.execute(db)
      return rows.map((row) => ({ ...row, columns: [] }))
    }
    return {
      getSchemas: () => kysely.getSchemas(),
      getTables,
      getMetadata: async () => ({ tables: await getTables() }),
    }
  }
}

/**
 * The database file exists, 0600, before SQLite opens it: SQLite would create it 0644, and it
 * gives its WAL and shared-memory files the database file's mode. Files an older version left
 * open to others are tightened (they are Tessera's own; a directory may not be).
 */
function createPrivately(file: string) {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600))
  for (const name of [file, `${file}-wal`, `${file}-shm`]) {
    const stat = statSync(name, { throwIfNoEntry: false })
    // Anything but a file (a directory in the way) is left for SQLite to refuse.
    if (stat?.isFile() && (stat.mode & 0o077) !== 0) chmodSync(name, 0o600)
  }
}

/**
 * Kysely sends every query unnamed, so PostgreSQL parses and plans it each time; planning
 * costs more than running a point or page query. Name each distinct SQL text (a bounded set:
 * the repositories' queries) so that each connection prepares it once.
 */
function preparingStatements(pool: pg.Pool, end: () => Promise<void>): PostgresPool {
  const names = new Map<string, string>()
  // Only the repositories' statements: migrations run DDL whose plans must not outlive it.
  const repositoryStatement = /^(select|insert|update|delete|with) [\s\S]*\b(tokens|accounts)\b/
  const nameOf = (text: string) => {
    let name = names.get(text)
    if (name === undefined && names.size < 256 && repositoryStatement.test(text)) {
      name = `tessera_${names.size}`
      names.set(text, name)
    }
    return name
  }
  return {
    async connect() {
      const client = await pool.connect()
      return {
        query: ((text: string, values: unknown[]): unknown => {
          const name = typeof text === 'string' ? nameOf(text) : undefined
          if (name === undefined) return client.query(text, values)
          // Not `client.query({ name, text, values })`: node-postgres copies a config object
          // through its property descriptors (8,000 instructions a query, 2 % of a create); a
          // query built from the text and named afterwards is sent the same way.
          return new Promise((resolve, reject) => {
            const query = new pg.Query(text, values, (err, result) =>
              err ? reject(err) : resolve(result),
            )
            client.query(Object.assign(query, { name }))
          })
        }) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      }
    },
    end,
  }
}

/**
 * better-sqlite3 12 wraps its databases and statements in `node::ObjectWrap`, a header-only
 * class compiled into the addon. From Node 24.19 its destructor removes an environment cleanup
 * hook (nodejs/node#63642), which needs an entered context; V8 runs the destructor from a weak
 * callback, and when that collection was set off by an allocation no context is entered: the
 * process aborts (`RemoveEnvironmentCleanupHook`, `Assertion failed: (env) != nullptr`;
 * nodejs/node#65446, open). better-sqlite3 13 uses Node-API instead, but needs Node 22. So on
 * Node 24 and later no object of better-sqlite3 may become garbage: every statement is kept as
 * long as its database (the SQL texts are a bounded set: multi-row statements come in runs of
 * powers of two, see `powerOfTwoRuns`), and a closed database and its statements are kept here
 * until the process exits. Nothing else in Tessera prepares a statement.
 */
const keptForever: unknown[] = []
const sqliteObjectsMustLive = Number(process.versions.node.split('.')[0]) >= 24

/**
 * Kysely prepares every query afresh; preparing costs more than running a point query. Keep
 * the prepared statements by SQL text (the repositories' queries, one per shape: a bounded set).
 */
function reusingStatements(sqlite: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>()
  // Where a statement may be collected, past this many an unseen text is prepared for its call.
  const kept = sqliteObjectsMustLive ? Number.POSITIVE_INFINITY : 256
  return {
    prepare(text: string) {
      // Kysely opens transactions with a deferred `begin`. A transaction that reads and then
      // writes (account create) fails at once with SQLITE_BUSY when another process (the CLI
      // beside the server) writes meanwhile, as SQLite cannot wait out that lock upgrade;
      // taking the write lock at `begin` makes it wait for busy_timeout instead.
      if (text === 'begin') text = 'begin immediate'
      let statement = statements.get(text)
      if (statement === undefined) {
        statement = sqlite.prepare(text)
        if (statements.size < kept) statements.set(text, statement)
      }
      return statement
    },
    close: () => {
      if (sqliteObjectsMustLive) keptForever.push(sqlite, statements)
      sqlite.close()
    },
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
  // Kysely looks for its own tables in every schema unless told which one is ours: another
  // schema's migration tables must not be taken for these.
  const migrationTableSchema =
    config.kind === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]
          ?.schema
      : undefined
  const migrator = new Migrator({ db, provider: migrationProvider, migrationTableSchema })
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
