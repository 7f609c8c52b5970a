import type { Logger } from 'pino'
import { AccountDirectory } from './accounts/directory.js'
import { type Config, ConfigError, systemReason } from './config.js'
import { postgresChanges, sqliteChanges } from './db/changes.js'
import type { Db } from './db/database.js'
import { changeDelays } from './metrics/metrics.js'
import { TokenCache } from './tokens/cache.js'
import { Keyring } from './tokens/keyring.js'
import { readLeakKeys } from './tokens/leaks.js'

// What a context is built on, before its services: keys read at start, the change feed.

/** The key file of DATA_DIR; a file that cannot be read or parsed stops start-up in one line. */
export function keyFile(dataDir: string): Keyring {
  try {
    return Keyring.fromDataDir(dataDir)
  } catch (err) {
    if (err instanceof ConfigError) throw err
    throw new ConfigError(`the signing key file in ${dataDir} cannot be used: ${systemReason(err)}`)
  }
}

/** LEAK_REPORT_KEYS, read at start: a file that cannot be used stops start-up in one line. */
export function leakKeysOf(config: Config): Map<string, string> | undefined {
  try {
    return config.leaks.keysFile === undefined ? undefined : readLeakKeys(config.leaks.keysFile)
  } catch (err) {
    throw new ConfigError(`LEAK_REPORT_KEYS cannot be used: ${systemReason(err)}`)
  }
}

/** The change feed and what it keeps exact: records and accounts cached while it is live. */
export function followChanges(config: Config, db: Db, log: Logger) {
  const cache = new TokenCache({ enabled: false })
  const directory = new AccountDirectory(db)
  directory.setEnabled(false)
  const { db: at } = config
  const changes =
    at.kind === 'postgres' ? postgresChanges(at, log) : sqliteChanges(db, log, at.file)
  let feedLive = false
  const delays = changeDelays()
  changes.listen(
    (id, writtenAt) => {
      if (id.startsWith('account:')) directory.invalidate(id.slice('account:'.length))
      else cache.invalidate(id)
      if (writtenAt !== undefined) delays.observe((Date.now() - writtenAt) / 1000)
    },
    (live) => {
      feedLive = live
      cache.setEnabled(live)
      directory.setEnabled(live)
    },
  )
  return { cache, directory, changes, delays, feedLive: () => feedLive }
}
