import type { Logger } from 'pino'
import { type Config, ConfigError } from '../config.js'
import { createDatabase, type Db, isUnavailable, migrateToLatest } from './database.js'

/** A database that refuses us for good (no such database, a refused login) stops start-up. */
function databaseFailure(err: unknown): ConfigError {
  const line = ((err as Error).message ?? String(err)).split('\n')[0]
  return new ConfigError(
    isUnavailable(err)
      ? `DATABASE_URL: the database cannot be reached: ${line}`
      : `DATABASE_URL: the database refused: ${line}`,
  )
}

/** The database, migrated; whether it is ready, and a stop for the retries of a late one. */
export interface OpenDatabase {
  db: Db
  ready(): boolean
  stop(): void
}

/**
 * Opens and migrates the database. One that cannot be reached stops start-up, unless the
 * caller waits for it: then migrations are retried every second until they are applied.
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  waitForDatabase: boolean | undefined,
): Promise<OpenDatabase> {
  const db = createDatabase(config.db)
  let ready = false
  let stopped = false
  const opened = {
    db,
    ready: () => ready,
    stop: () => {
      stopped = true
    },
  }
  try {
    await migrateToLatest(db, config.db)
    ready = true
    return opened
  } catch (err) {
    if (!waitForDatabase || !isUnavailable(err)) {
      await db.destroy()
      // SQLite's own failures (a corrupt file) keep their stack: they are not configuration.
      throw config.db.kind === 'postgres' ? databaseFailure(err) : err
    }
    log.warn(
      { err: (err as Error).message },
      'database unreachable: answering 503 until it is back',
    )
  }
  void (async () => {
    while (!ready && !stopped) {
      await new Promise((resolve) => setTimeout(resolve, 1000))
      if (stopped) break
      await migrateToLatest(db, config.db).then(
        () => {
          ready = true
          log.warn('database reachable: migrations applied, answering again')
        },
        (e) => stopped || isUnavailable(e) || log.error({ err: e }, 'migrations failed'),
      )
    }
  })()
  return opened
}
