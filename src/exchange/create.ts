import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { Metrics } from '../metrics/metrics.js'
import type { RateLimiter } from '../ratelimit/limiter.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import type { Keyring } from '../tokens/keyring.js'
import type { AccountLookup } from '../tokens/validator.js'
import { exchangeWait } from '../verification/exchanges.js'
import { IssuerKeys } from './issuer-keys.js'
import { ExchangeService } from './service.js'

export type { ExchangeService }

/** The exchange of a serving process: its issuers' keys kept for the life of the process. */
export function exchangeOf(
  config: Config,
  deps: {
    db: Db
    keyring: Keyring
    catalog: ScopeCatalog
    directory: AccountLookup
    metrics: Metrics
    rateLimiter: RateLimiter
    /** Its clock is the service's. */
    tokens: { now: () => number }
  },
): ExchangeService {
  const { directory, metrics, rateLimiter } = deps
  const now = deps.tokens.now
  return new ExchangeService({
    ...deps,
    now,
    keys: new IssuerKeys({
      now,
      caFile: config.machines.caFile,
      allowPrivate: config.machines.allowPrivate,
    }),
    // A disabled account exchanges nothing, as its tokens are refused.
    account: async (username) => {
      const account = await directory.find(username)
      return account?.disabled === false ? account : undefined
    },
    limit: (username) =>
      exchangeWait(rateLimiter, `account:${username}`, now(), config.rateLimitPerMinute),
    count: (outcome) => {
      metrics.exchanges[outcome] = (metrics.exchanges[outcome] ?? 0) + 1
    },
  })
}
