import { type Logger, pino } from 'pino'
import { AccountService } from './accounts/service.js'
import { AdminKeys } from './admin/keys.js'
import { AuditLog } from './audit/log.js'
import { prepareDataDir } from './config/data-dir.js'
import type { Config } from './config.js'
import { followChanges, keyFile, leakKeysOf } from './context-start.js'
import { auditRepo } from './db/audit.js'
import type { Db } from './db/database.js'
import { type OpenDatabase, openDatabase } from './db/open.js'
import { outboxRepo } from './db/outbox.js'
import { warningsRepo } from './db/warnings.js'
import { webhookRepo } from './db/webhooks.js'
import { EventFeed } from './events/feed.js'
import { type ExchangeService, exchangeOf } from './exchange/create.js'
import { TokenHygiene, type TokenWarning } from './hygiene/hygiene.js'
import { backgroundJobs, startJobs } from './jobs.js'
import { createMailer, type Mailer } from './mail/mailer.js'
import { mailWarning } from './mail/warnings.js'
import { Metrics } from './metrics/metrics.js'
import { registerTelemetry } from './metrics/telemetry.js'
import { registerVerificationLog } from './metrics/verification-log.js'
import { FactorService } from './people/factors.js'
import { MemberService } from './people/members.js'
import { PasskeyService } from './people/passkeys.js'
import { SessionService } from './people/sessions.js'
import { type IpcChannel, PrimaryAttempts } from './ratelimit/attempts.js'
import { limiterOf } from './ratelimit/choose.js'
import { LeasingRateLimiter } from './ratelimit/leases.js'
import type { RateLimiter } from './ratelimit/limiter.js'
import { requestsLimit } from './ratelimit/named.js'
import { ScopeCatalog } from './scopes/catalog.js'
import { type Telemetry, telemetryFrom } from './telemetry/index.js'
import { isoTime } from './time.js'
import { Keyring } from './tokens/keyring.js'
import { LeakService } from './tokens/leaks.js'
import { TokenService } from './tokens/service.js'
import { CreditService, creditCarver } from './usage/credits.js'
import type { Meter } from './usage/meter.js'
import { meterOf } from './usage/writes.js'
import { Checkpoint } from './verification/checkpoint.js'
import { LimitBook } from './verification/limits.js'
import { type Verifications, verificationsOf } from './verification/verifications.js'
import { WebhookDispatcher } from './webhooks/dispatcher.js'

/** Every dependency, built once from config. Tests pass overrides instead of patching globals. */
export interface AppContext {
  config: Config
  log: Logger
  /** Migrations applied: the service can answer. */
  readonly ready: boolean
  /** The change feed keeps every instance's token cache exact (always so on SQLite). */
  readonly feedLive: boolean
  /** Shutting down: /readyz answers 503 so that load balancers stop sending requests. */
  draining: boolean
  /** When /readyz was last asked (epoch ms): something is watching, so shutdown waits for it. */
  probedAt: number
  /** This process's index among the workers of a primary (WORKERS > 1); none when alone. */
  worker?: number
  /** A worker's sign-in attempts, counted by its primary for every worker (without Redis). */
  primaryAttempts?: PrimaryAttempts
  db: Db
  keyring: Keyring
  catalog: ScopeCatalog
  tokens: TokenService
  accounts: AccountService
  /** Account holders of the dashboard: passwords, setup links, sessions. */
  holders: SessionService
  /** The people of accounts: members, roles, invitations, portal links, single sign-on. */
  members: MemberService
  /** Second factors (authenticator apps, passkeys), recovery codes, the 2FA policy. */
  factors: FactorService
  /** Passkeys (WebAuthn): registration and sign-in ceremonies. */
  passkeys: PasskeyService
  /** Leaked tokens reported by GitHub, an operator's scanners or anyone: revoked or flagged. */
  leaks: LeakService
  rateLimiter: RateLimiter
  /** Where a verification is decided: limits, counting, credits (src/verification). */
  checkpoint: Checkpoint
  /** Operator keys of the admin API: ADMIN_KEYS, or the hashed key file in DATA_DIR. */
  adminKeys: AdminKeys
  /** Reading the audit log (events are written by the services). */
  audit: AuditLog
  /** Counters for /metrics (plain numbers; prom-client reads them when scraped). */
  metrics: Metrics
  /** Verifications by outcome per account, token and minute; last use (docs/metering.md). */
  usage: Meter
  /** The verification log: a row per verification (docs/verifications.md). */
  verifications: Verifications
  /** OpenTelemetry export (OTEL_*, docs/telemetry.md); none, and nothing of it loaded, when off. */
  telemetry?: Telemetry
  /** Credits of tokens and accounts: balances, refills, spending and verifiers' leases. */
  credits: CreditService
  /** The integrations' outbox, followed: what the event stream serves. */
  events: EventFeed
  /** Warnings before tokens end, and idle tokens deleted by policy (docs/token-policy.md). */
  hygiene: TokenHygiene
  /** Delivers the outbox's events to the registered webhook endpoints. */
  webhooks: WebhookDispatcher
  /** Workload identity exchange and the accounts' trust policies (docs/machines.md). */
  exchange: ExchangeService
  /** SMTP_URL's mailer: invitations and token warnings (docs/mail.md); none when it is unset. */
  mailer?: Mailer
  /** Starts the background jobs of a serving process: usage flushes, retention pruning, webhooks. */
  startBackground(): void
  /**
   * Removes audit events past AUDIT_RETENTION_DAYS, outbox events past EVENT_RETENTION_HOURS and
   * usage past USAGE_*_RETENTION_DAYS; what the job runs.
   */
  prune(): Promise<number>
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
  worker?: number
  /** A worker's IPC channel to its primary: rate limits, usage counts, sign-in attempts. */
  primary?: IpcChannel
}

/** The services of the context, over an open database and a followed change feed. */
function buildServices(
  config: Config,
  log: Logger,
  overrides: Overrides,
  started: { keyring: Keyring; catalog: ScopeCatalog; leakKeys?: Map<string, string> },
  opened: OpenDatabase,
  followed: ReturnType<typeof followChanges>,
) {
  const { db } = opened
  const { keyring, catalog } = started
  const { cache, directory, changes } = followed
  const { now, primary } = overrides
  const rateLimiter = limiterOf(config, log, primary)
  const leasing = rateLimiter instanceof LeasingRateLimiter ? rateLimiter : undefined
  const book = new LimitBook(catalog, requestsLimit(config.rateLimitPerMinute))
  const metrics = new Metrics({
    cache,
    changeDelays: followed.delays,
    leases: leasing && { counter: config.redis ? 'redis' : 'worker', figures: leasing },
    limitVerdicts: book.byName,
    feedLive: followed.feedLive,
    ready: opened.ready,
    processMetrics: config.metrics !== undefined || config.telemetry?.metrics !== undefined,
  })
  const usage = meterOf(db, now ?? Date.now, config.usage, { log, figures: metrics, primary })
  const file = config.db.kind === 'sqlite' ? config.db.file : undefined
  const verifications = verificationsOf(db, config.usage.log, { now: now ?? Date.now, log, file })
  registerVerificationLog(metrics.registry, verifications.log)
  const tokens = new TokenService({
    db,
    keyring,
    catalog,
    cache,
    changes,
    now,
    directory,
    groupCommits: metrics.groupCommits,
    childDepth: config.machines.childDepth,
    carveCredits: creditCarver(catalog, now ?? Date.now),
  })
  const accounts = new AccountService(db, catalog, tokens)
  const mailer = createMailer(config, log)
  const onWarning = mailer && ((w: TokenWarning) => void mailWarning(mailer, db, w))
  const { portalReturnOrigins } = config.dashboard
  return {
    db,
    keyring,
    catalog,
    tokens,
    accounts,
    holders: new SessionService(db, accounts, tokens.now),
    members: new MemberService(db, accounts, tokens.now, portalReturnOrigins, mailer),
    factors: new FactorService(db, keyring, tokens.now, config.dashboard.require2fa),
    passkeys: new PasskeyService(db, tokens.now),
    leaks: new LeakService(db, tokens, accounts, config.leaks.policy, started.leakKeys),
    rateLimiter,
    checkpoint: new Checkpoint({
      limiter: rateLimiter,
      usage,
      book,
      now: tokens.now,
      log: verifications.log,
    }),
    primaryAttempts: primary && new PrimaryAttempts(primary),
    audit: new AuditLog((filter) => auditRepo.list(db, filter)),
    metrics,
    usage,
    verifications,
    credits: new CreditService({ db, catalog, config, log, now: tokens.now }),
    hygiene: new TokenHygiene({ db, catalog, tokens, log, onWarning }),
    events: new EventFeed(db, log),
    webhooks: new WebhookDispatcher({ db, log, config, now: now ?? Date.now }),
    mailer,
    exchange: exchangeOf(config, { db, keyring, catalog, directory, metrics, rateLimiter, tokens }),
  }
}

/** The OpenTelemetry export, started, its counters on /metrics; verification rows sent to it. */
async function telemetryOfContext(
  config: Config,
  services: ReturnType<typeof buildServices>,
  now: () => number,
  log: Logger,
) {
  const { metrics, verifications } = services
  const telemetry = await telemetryFrom(config.telemetry, { now, registry: metrics.registry, log })
  if (telemetry === undefined) return undefined
  registerTelemetry(metrics.registry, telemetry.counters)
  if (config.telemetry?.logs !== undefined) {
    verifications.log.forwardTo((row) => telemetry.exportLogs([row]))
  }
  return telemetry
}

export async function createContext(
  config: Config,
  overrides: Overrides = {},
): Promise<AppContext> {
  if (config.db.kind === 'sqlite' || config.signingKeys === undefined) {
    prepareDataDir(config.dataDir)
  }
  const keyring = config.signingKeys ? Keyring.fromEnv(config.signingKeys) : keyFile(config.dataDir)
  const catalog = ScopeCatalog.fromFile(config.scopesFile)
  const log = overrides.log ?? pino({ level: 'silent' })
  const adminKeys = AdminKeys.open(config, (err) =>
    log.warn({ err: (err as Error).message }, 'admin key file unusable: no operator key is valid'),
  )
  const started = { keyring, catalog, leakKeys: leakKeysOf(config) }
  const opened = await openDatabase(config, log, overrides.waitForDatabase)
  const followed = followChanges(config, opened.db, log)
  const services = buildServices(config, log, overrides, started, opened, followed)
  const { db, tokens, usage, members, factors, events, webhooks, rateLimiter } = services
  const now = overrides.now ?? Date.now
  const telemetry = await telemetryOfContext(config, services, now, log)
  const prune = async () => {
    const cutoff = isoTime(now() - config.auditRetentionDays * 86_400_000)
    const removed = await auditRepo.prune(db, cutoff)
    const eventCutoff = isoTime(now() - config.eventRetentionHours * 3_600_000)
    await outboxRepo.prune(db, eventCutoff, await webhookRepo.lowestCursor(db))
    await usage.prune()
    await services.credits.prune()
    await warningsRepo.prune(db)
    await members.prune()
    await factors.prune()
    await services.exchange.pruneJtis()
    await services.verifications.prune()
    return removed
  }
  let timers: NodeJS.Timeout[] = []
  return {
    config,
    log,
    get ready() {
      return opened.ready()
    },
    get feedLive() {
      return followed.feedLive()
    },
    draining: false,
    probedAt: 0,
    worker: overrides.worker,
    ...services,
    ...(telemetry === undefined ? {} : { telemetry }),
    adminKeys,
    startBackground() {
      usage.start()
      services.verifications.start()
      telemetry?.startMetrics()
      webhooks.start()
      timers = startJobs(log, opened.ready, backgroundJobs(prune, tokens, services.hygiene))
    },
    prune,
    async close() {
      opened.stop()
      for (const timer of timers) clearTimeout(timer)
      events.close()
      await webhooks.stop()
      await services.mailer?.close()
      if (opened.ready() || overrides.primary) await usage.stop().catch(() => {})
      else log.warn('database not ready: the usage counts not yet written are dropped')
      if (opened.ready()) await services.verifications.stop()
      await telemetry?.shutdown()
      await followed.changes.close()
      await rateLimiter.close()
      await services.primaryAttempts?.close()
      await db.destroy()
    },
  }
}
