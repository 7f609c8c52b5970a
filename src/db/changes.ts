import { type FSWatcher, watch } from 'node:fs'
import path from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { compiledOnce } from './compiled.js'
import type { Db } from './database.js'

const channel = 'tessera_token_changes'

/**
 * Tells every instance that a token changed (updated or deleted), so that caches drop it.
 * `notify` runs in the transaction of the write: PostgreSQL delivers the notification at
 * commit, atomically with the change.
 */
export interface TokenChanges {
  notify(db: Db, id: string): Promise<void>
  /** Calls `changed(id, at)` for every change elsewhere (`at`: when it was written, epoch ms,
   * where the feed knows), `live(false)` when the feed is lost and `live(true)` when it is
   * (re)established. */
  listen(changed: (id: string, at?: number) => void, live: (up: boolean) => void): void
  close(): Promise<void>
}

/** In process only (tests of the token service alone): nobody else to tell. */
export const localChanges: TokenChanges = {
  notify: async () => {},
  listen: (_changed, live) => live(true),
  close: async () => {},
}

const pollMs = 500
const keepMs = 3_600_000
/** A commit seen on the WAL is read at once and again after these pauses (see `watchWal`). */
const followUpsMs = [1, 2, 7, 40]
/** A watch that failed is tried again after this long (the poll reads meanwhile). */
const watchRetryMs = 5_000

/**
 * SQLite: the server owns the data, but its workers (WORKERS) and the CLI (`tessera token
 * roll`) change tokens in the same file. Changes are written to `token_changes` in the
 * transaction of the write. Every process reads the new ones as soon as any process commits
 * (see `watchWal`), and twice a second whatever happens, should a notice be missed.
 */
export function sqliteChanges(db: Db, log: Logger, file?: string): TokenChanges {
  let timer: NodeJS.Timeout | undefined
  let watcher: { close(): void } | undefined
  let last = 0
  let polls = 0
  let closed = false
  const poll = async (changed: (id: string, at: number) => void) => {
    // Compiled once: the statement is the same for every read.
    const query = compiledOnce(db, 'token changes after', [last, 1000], () =>
      db
        .selectFrom('token_changes')
        .select(['seq', 'id', 'at'])
        .where('seq', '>', last)
        .orderBy('seq')
        .limit(1000),
    )
    const { rows } = await db.executeQuery<{ seq: number; id: string; at: number }>(query)
    for (const row of rows) {
      last = row.seq
      changed(row.id, row.at)
    }
  }
  const prune = () =>
    db
      .deleteFrom('token_changes')
      .where('at', '<', Date.now() - keepMs)
      .execute()
  const failed = (err: unknown) =>
    log.warn({ err: (err as Error).message }, 'reading token changes failed')
  return {
    async notify(trx, id) {
      await trx.insertInto('token_changes').values({ id, at: Date.now() }).execute()
    },
    listen(changed, live) {
      live(true)
      const reads = serialised(() => poll(changed), failed)
      void (async () => {
        const top = await db
          .selectFrom('token_changes')
          .select((eb) => eb.fn.max('seq').as('seq'))
          .executeTakeFirst()
          .catch(() => undefined)
        last = Number(top?.seq ?? 0)
        if (closed) return
        if (file !== undefined) watcher = watchWal(file, reads, log)
        timer = setInterval(() => {
          reads()
          if (++polls % 120 === 0) prune().catch(failed)
        }, pollMs)
        timer.unref()
      })()
    },
    async close() {
      closed = true
      clearInterval(timer)
      watcher?.close()
    },
  }
}

/**
 * `read` as a function that never runs twice at once: a call while it runs makes one more run
 * after it, however many calls came meanwhile.
 */
function serialised(read: () => Promise<void>, failed: (err: unknown) => void): () => void {
  let running = false
  let again = false
  const run = () => {
    if (running) {
      again = true
      return
    }
    running = true
    read()
      .catch(failed)
      .finally(() => {
        running = false
        if (again) {
          again = false
          run()
        }
      })
  }
  return run
}

/**
 * Every commit to the database, by any process, writes its pages to the `-wal` file: the
 * kernel tells us of that write (inotify, through fs.watch on the directory, so that a WAL file
 * made anew is followed too) within microseconds, and the change table is read at once. The
 * write comes just before the commit is published in the WAL's index (shared memory, which
 * nothing can watch), and a writer descheduled between the two publishes late: reads follow
 * 1, 3, 10 and 50 ms after the last write seen (a few indexed reads per burst of commits).
 * What this cannot see (a file system without notifications) the poll still reads.
 */
function watchWal(file: string, read: () => void, log: Logger): { close(): void } {
  const wal = `${path.basename(file)}-wal`
  let followUp: NodeJS.Timeout | undefined
  const follow = (step: number) => {
    const pause = followUpsMs[step]
    if (pause === undefined) return
    followUp = setTimeout(() => {
      followUp = undefined
      read()
      follow(step + 1)
    }, pause)
  }
  const committed = () => {
    read()
    clearTimeout(followUp)
    follow(0)
  }
  let watcher: FSWatcher | undefined
  let retry: NodeJS.Timeout | undefined
  let closed = false
  const start = () => {
    if (closed) return
    try {
      const w = watch(path.dirname(file), { persistent: false }, (_event, name) => {
        if (name === wal) committed()
      })
      w.on('error', (err) => {
        log.warn({ err: err.message }, 'watching the database for commits failed: polling only')
        w.close()
        retry = setTimeout(start, watchRetryMs).unref()
      })
      watcher = w
    } catch (err) {
      // Out of inotify instances (fs.inotify.max_user_instances), say.
      log.warn(
        { err: (err as Error).message },
        'cannot watch the database for commits: polling only',
      )
    }
  }
  start()
  return {
    close() {
      closed = true
      clearTimeout(followUp)
      clearTimeout(retry)
      watcher?.close()
    },
  }
}

/** PostgreSQL LISTEN/NOTIFY on a dedicated connection, re-established after a loss. */
export function postgresChanges(
  config: Extract<Config['db'], { kind: 'postgres' }>,
  log: Logger,
): TokenChanges {
  let client: pg.Client | undefined
  let closed = false
  let retry: NodeJS.Timeout | undefined
  let attempt = 0

  const connect = async (changed: (id: string) => void, live: (up: boolean) => void) => {
    const c = new pg.Client({
      connectionString: config.url,
      connectionTimeoutMillis: 3000,
      application_name: `tessera-changes:${config.schema ?? 'default'}`,
      ...(config.schema ? { options: `-c search_path=${config.schema}` } : {}),
    })
    const lost = () => {
      if (client !== c) return
      client = undefined
      live(false)
      c.end().catch(() => {})
      if (!closed) schedule(changed, live)
    }
    c.on('error', lost)
    c.on('end', lost)
    c.on('notification', (n) => {
      if (n.channel === channel && n.payload) changed(n.payload)
    })
    try {
      client = c
      await c.connect()
      await c.query(`listen ${channel}`)
      if (attempt > 0) log.warn('token change feed restored: caching token records again')
      attempt = 0
      live(true)
    } catch {
      lost()
    }
  }
  const schedule = (changed: (id: string) => void, live: (up: boolean) => void) => {
    if (attempt++ === 0)
      log.warn('token change feed lost: token records are read from the database')
    retry = setTimeout(() => connect(changed, live), Math.min(attempt * 250, 2000))
  }

  return {
    async notify(db, id) {
      await sql`select pg_notify(${channel}, ${id})`.execute(db)
    },
    listen(changed, live) {
      live(false)
      void connect(changed, live)
    },
    async close() {
      closed = true
      clearTimeout(retry)
      const c = client
      client = undefined
      await c?.end().catch(() => {})
    },
  }
}
