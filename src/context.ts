import { type Logger, pino } from 'pino'
import { HolderService } from './accounts/holders.js'
import { AccountService } from './accounts/service.js'
import type { Config } from './config.js'
import { localChanges, postgresChanges } from './db/changes.js'
import { createDatabase, type Db, isUnavailable, migrateToLatest } from './db/database.js'
import { MemoryRateLimiter, type RateLimiter } from './ratelimit/limiter.js'
import { RedisRateLimiter } from './ratelimit/redis.js'
import { ScopeCatalog } from './scopes/catalog.js'
import { TokenCache } from './tokens/cache.js'
import { Keyring } from './tokens/keyring.js'
import { TokenService } from './tokens/service.js'

/** Every dependency, built once from config. Tests pass overrides instead of patching globals. */
export interface AppContext {
  config: Config
  log: Logger
  /** Migrations applied: the service can answer. */
  readonly ready: boolean
  db: Db
  keyring: Keyring
  catalog: ScopeCatalog
  tokens: TokenService
  accounts: AccountService
  /** Account holders of the dashboard: passwords, setup links, sessions. */
  holders: HolderService
  rateLimiter: RateLimiter
  close(): Promise<void>
}

export interface Overrides {
  now?: () => number
  log?: Logger
  /**
   * The server's choice: when the database cannot be reached at start, come up anyway (the
   * app answers 503 until `ready`) and keep migrating in the background. The CLI fails instead.
   */
  waitForDatabase?: boolean
}

export async function createContext(
  config: Config,
  overrides: Overrides = {},
): Promise<AppContext> {
  const keyring = config.signingKeys
    ? Keyring.fromEnv(config.signingKeys)
    : Keyring.fromDataDir(config.dataDir)
  const catalog = ScopeCatalog.fromFile(config.scopesFile)
  const log = overrides.log ?? pino({ level: 'silent' })
  const db = createDatabase(config.db)
  let ready = false
  let stopped = false
  try {
    await migrateToLatest(db, config.db)
    ready = true
  } catch (err) {
    if (!overrides.waitForDatabase || !isUnavailable(err)) {
      await db.destroy()
      throw err
    }
    log.warn(
      { err: (err as Error).message },
      'database unreachable: answering 503 until it is back',
    )
    void (async () => {
      while (!ready && !stopped) {
        await new Promise((resolve) => setTimeout(resolve, 1000))
        await migrateToLatest(db, config.db).then(
          () => {
            ready = true
            log.warn('database reachable: migrations applied, answering again')
          },
          (e) => isUnavailable(e) || log.error({ err: e }, 'migrations failed'),
        )
      }
    })()
  }
  // Token records are cached in process only while the change feed keeps every cache exact.
  const cache = new TokenCache({ enabled: false })
  const changes = config.db.kind === 'postgres' ? postgresChanges(config.db, log) : localChanges
  changes.listen(
    (id) => cache.invalidate(id),
    (live) => cache.setEnabled(live),
  )
  const tokens = new TokenService({ db, keyring, catalog, cache, changes, now: overrides.now })
  const accounts = new AccountService(db, catalog, tokens)
  const holders = new HolderService(db, accounts, tokens.now)
  const rateLimiter = config.redis
    ? new RedisRateLimiter(config.redis.url, config.redis.keyPrefix, config.rateLimitPerMinute, log)
    : new MemoryRateLimiter(config.rateLimitPerMinute)
  return {
    config,
    log,
    get ready() {
      return ready
    },
    db,
    keyring,
    catalog,
    tokens,
    accounts,
    holders,
    rateLimiter,
    async close() {
      stopped = true
      await changes.close()
      await rateLimiter.close()
      await db.destroy()
    },
  }
}
