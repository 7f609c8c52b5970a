import { availableParallelism } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type DashboardConfig, dashboardConfig } from './config/dashboard.js'
import {
  type DatabaseConfig,
  databaseConfig,
  type RedisConfig,
  redisConfig,
} from './config/database.js'
import type { Env } from './config/env.js'
import { ConfigError } from './config/error.js'
import { type HttpConfig, httpConfig } from './config/http.js'
import { type MailConfig, mailConfig } from './config/mail.js'
import { type UsageConfig, usageConfig } from './config/usage.js'
import { flag, integer } from './config/values.js'
import { type TelemetryConfig, telemetryConfig } from './telemetry/config.js'

export { type Env, readEnv } from './config/env.js'
export { ConfigError, systemReason } from './config/error.js'
export { configuredOrigin } from './config/http.js'

export interface Config {
  http: HttpConfig
  dataDir: string
  db: DatabaseConfig
  redis?: RedisConfig
  scopesFile: string
  signingKeys?: string
  rateLimitPerMinute: number
  logLevel: string
  /** Requests are shed (503) while the event loop runs later than this on average; 0: never. */
  shedDelayMs: number
  dashboard: DashboardConfig
  /** Operator keys for /admin/v1 given in the environment (`<id>:<secret>,...`), as given. */
  adminKeys?: string
  /** Audit events older than this are pruned in the background. */
  auditRetentionDays: number
  /** How long the integrations' outbox keeps events (event stream resumption, webhooks). */
  eventRetentionHours: number
  /** Webhook endpoints may resolve to loopback, link-local or private addresses (tests). */
  webhookAllowPrivate: boolean
  /** PEM certificate authorities that webhook deliveries trust besides the system's. */
  webhookCaFile?: string
  /** Leaked tokens: GitHub's public keys document (a file), and what a live report does. */
  leaks: { keysFile?: string; policy: 'auto' | 'revoke' | 'flag' }
  /** The Prometheus listener (plain HTTP); none when METRICS_PORT is unset. */
  metrics?: { host: string; port: number }
  /** Metering: retention of the verification counts, credit thresholds. */
  usage: UsageConfig
  /** Mail (invitations, token warnings) through SMTP_URL; none when it is unset. */
  mail?: MailConfig
  /** Processes serving the port (WORKERS): above 1, a primary supervises that many workers. */
  workers: number
  /**
   * WORKER_TIMEOUT_SECONDS: a worker silent this long (no answer to the primary's ping) is killed.
   * At least 10 s: a healthy worker may wait up to 5 s for SQLite's write lock (busy_timeout).
   */
  workerTimeoutMs: number
  /** OpenTelemetry export (docs/telemetry.md): the standard OTEL_* variables; none when unset. */
  telemetry?: TelemetryConfig
  /** Tokens for machines (docs/machines.md): child tokens' depth, identity issuers' CAs. */
  machines: {
    /** CHILD_TOKEN_DEPTH: levels of children below a token, 1 to 4. */
    childDepth: number
    /** EXCHANGE_CA_FILE: PEM certificate authorities trusted for identity issuers' keys. */
    caFile?: string
    /** EXCHANGE_ALLOW_PRIVATE: issuers may be at private addresses (see IssuerKeys). */
    allowPrivate: boolean
  }
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

const here = path.dirname(fileURLToPath(import.meta.url))
/** The package root, whether running from src/ (tests) or dist/src/ (build). */
export const packageRoot = path.resolve(
  here,
  here.endsWith(path.join('dist', 'src')) ? '../..' : '..',
)
export const defaultScopesFile = path.join(packageRoot, 'catalog', 'default.yaml')

function logLevel(value: string | undefined): string {
  const level = value ?? 'info'
  if (!logLevels.includes(level)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(', ')}`)
  }
  return level
}

function leakPolicy(value: string | undefined): Config['leaks']['policy'] {
  const policy = value ?? 'auto'
  if (policy !== 'auto' && policy !== 'revoke' && policy !== 'flag') {
    throw new ConfigError(`LEAKED_TOKENS must be auto, revoke or flag, got "${policy}"`)
  }
  return policy
}

function metricsConfig(env: Env): Config['metrics'] {
  if (env.METRICS_PORT === undefined) return undefined
  return {
    host: env.METRICS_HOST ?? '127.0.0.1',
    port: integer('METRICS_PORT', env.METRICS_PORT, 0, 0, 65535),
  }
}

/** WORKERS: a number of processes, or `auto`: as many as the cores this process may use. */
function workersConfig(value: string | undefined): number {
  if (value === undefined) return 1
  if (value === 'auto') return availableParallelism()
  const n = Number(value)
  if (/^\d+$/.test(value) && n >= 1 && n <= 256) return n
  throw new ConfigError(`WORKERS must be auto or an integer between 1 and 256, got "${value}"`)
}

/** The OTEL_* variables read; a bad value stops start-up in one line, as any other's. */
function telemetryOf(env: Env): { telemetry?: TelemetryConfig } {
  try {
    const telemetry = telemetryConfig(env)
    return telemetry === undefined ? {} : { telemetry }
  } catch (err) {
    throw new ConfigError((err as Error).message)
  }
}

/** Applies defaults and cross-field checks; throws ConfigError with a one-line reason. */
export function toConfig(env: Env): Config {
  const dataDir = path.resolve(env.DATA_DIR ?? './data')
  const http = httpConfig(env)
  const db = databaseConfig(env, dataDir)
  const redis = redisConfig(env)
  const level = logLevel(env.LOG_LEVEL)
  return {
    http,
    dataDir,
    db,
    redis,
    scopesFile: env.SCOPES_FILE ?? defaultScopesFile,
    signingKeys: env.SIGNING_KEYS,
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', env.RATE_LIMIT_PER_MINUTE, 100, 1, 1e9),
    logLevel: level,
    shedDelayMs: integer('SHED_DELAY_MS', env.SHED_DELAY_MS, 200, 0, 60_000),
    dashboard: dashboardConfig(env),
    adminKeys: env.ADMIN_KEYS,
    auditRetentionDays: integer('AUDIT_RETENTION_DAYS', env.AUDIT_RETENTION_DAYS, 365, 1, 36_500),
    // Webhooks are retried for 24 hours: their events must outlive that.
    eventRetentionHours: integer(
      'EVENT_RETENTION_HOURS',
      env.EVENT_RETENTION_HOURS,
      168,
      25,
      24 * 36_500,
    ),
    webhookAllowPrivate: flag('WEBHOOK_ALLOW_PRIVATE', env.WEBHOOK_ALLOW_PRIVATE),
    webhookCaFile: env.WEBHOOK_CA_FILE,
    leaks: { keysFile: env.LEAK_REPORT_KEYS, policy: leakPolicy(env.LEAKED_TOKENS) },
    metrics: metricsConfig(env),
    usage: usageConfig(env),
    mail: mailConfig(env, http.publicUrl),
    workers: workersConfig(env.WORKERS),
    workerTimeoutMs:
      integer('WORKER_TIMEOUT_SECONDS', env.WORKER_TIMEOUT_SECONDS, 30, 10, 3600) * 1000,
    ...telemetryOf(env),
    machines: {
      childDepth: integer('CHILD_TOKEN_DEPTH', env.CHILD_TOKEN_DEPTH, 4, 1, 4),
      allowPrivate: flag('EXCHANGE_ALLOW_PRIVATE', env.EXCHANGE_ALLOW_PRIVATE),
      ...(env.EXCHANGE_CA_FILE === undefined ? {} : { caFile: env.EXCHANGE_CA_FILE }),
    },
  }
}
