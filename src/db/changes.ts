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
  /** Calls `changed(id)` for every change elsewhere, `live(false)` when the feed is lost and
   * `live(true)` when it is (re)established. */
  listen(changed: (id: string) => void, live: (up: boolean) => void): void
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

/**
 * SQLite: the server owns the data, but the CLI may change tokens on the same file while it
 * runs (`tessera token roll`). Changes are written to `token_changes` in the transaction of the
 * write, and the server reads the new ones twice a second.
 */
export function sqliteChanges(db: Db, log: Logger): TokenChanges {
  let timer: NodeJS.Timeout | undefined
  let last = 0
  let polls = 0
  let closed = false
  const poll = async (changed: (id: string) => void) => {
    // Compiled once: twice a second is too rare for the JIT to make Kysely's builder cheap.
    const query = compiledOnce(db, 'token changes after', [last, 1000], () =>
      db
        .selectFrom('token_changes')
        .select(['seq', 'id'])
        .where('seq', '>', last)
        .orderBy('seq')
        .limit(1000),
    )
    const { rows } = await db.executeQuery<{ seq: number; id: string }>(query)
    for (const row of rows) {
      last = row.seq
      changed(row.id)
    }
    if (++polls % 120 === 0) {
      await db
        .deleteFrom('token_changes')
        .where('at', '<', Date.now() - keepMs)
        .execute()
    }
  }
  return {
    async notify(trx, id) {
      await trx.insertInto('token_changes').values({ id, at: Date.now() }).execute()
    },
    listen(changed, live) {
      live(true)
      void (async () => {
        const top = await db
          .selectFrom('token_changes')
          .select((eb) => eb.fn.max('seq').as('seq'))
          .executeTakeFirst()
          .catch(() => undefined)
        last = Number(top?.seq ?? 0)
        if (closed) return
        timer = setInterval(() => {
          poll(changed).catch((err) =>
            log.warn({ err: (err as Error).message }, 'reading token changes failed'),
          )
        }, pollMs)
        timer.unref()
      })()
    },
    async close() {
      closed = true
      clearInterval(timer)
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
