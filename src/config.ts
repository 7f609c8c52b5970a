import { existsSync, readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseEnv } from 'node:util'

/** Every environment variable Tessera reads, as given. Nothing below context.ts reads process.env. */
export interface Env {
  PORT?: string
  HOST?: string
  DATA_DIR?: string
  TLS_CERT?: string
  TLS_KEY?: string
  TRUST_PROXY?: string
  PUBLIC_URL?: string
  SIGNING_KEYS?: string
  SCOPES_FILE?: string
  DATABASE_URL?: string
  DATABASE_POOL_SIZE?: string
  DATABASE_SCHEMA?: string
  REDIS_URL?: string
  REDIS_KEY_PREFIX?: string
  RATE_LIMIT_PER_MINUTE?: string
  LOG_LEVEL?: string
  DASHBOARD_SIGNUP?: string
  LEAK_REPORT_KEYS?: string
  LEAKED_TOKENS?: string
  DASHBOARD_REQUIRE_2FA?: string
  PORTAL_RETURN_ORIGINS?: string
  OIDC_ISSUER?: string
  OIDC_CLIENT_ID?: string
  OIDC_CLIENT_SECRET?: string
  OIDC_NAME?: string
  OIDC_ONLY?: string
  OIDC_CA_FILE?: string
  SHED_DELAY_MS?: string
  ADMIN_KEYS?: string
  AUDIT_RETENTION_DAYS?: string
  EVENT_RETENTION_HOURS?: string
  WEBHOOK_ALLOW_PRIVATE?: string
  WEBHOOK_CA_FILE?: string
  METRICS_PORT?: string
  METRICS_HOST?: string
}

const names: (keyof Env)[] = [
  'PORT',
  'HOST',
  'DATA_DIR',
  'TLS_CERT',
  'TLS_KEY',
  'TRUST_PROXY',
  'PUBLIC_URL',
  'SIGNING_KEYS',
  'SCOPES_FILE',
  'DATABASE_URL',
  'DATABASE_POOL_SIZE',
  'DATABASE_SCHEMA',
  'REDIS_URL',
  'REDIS_KEY_PREFIX',
  'RATE_LIMIT_PER_MINUTE',
  'LOG_LEVEL',
  'DASHBOARD_SIGNUP',
  'LEAK_REPORT_KEYS',
  'LEAKED_TOKENS',
  'DASHBOARD_REQUIRE_2FA',
  'PORTAL_RETURN_ORIGINS',
  'OIDC_ISSUER',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'OIDC_NAME',
  'OIDC_ONLY',
  'OIDC_CA_FILE',
  'SHED_DELAY_MS',
  'ADMIN_KEYS',
  'AUDIT_RETENTION_DAYS',
  'EVENT_RETENTION_HOURS',
  'WEBHOOK_ALLOW_PRIVATE',
  'WEBHOOK_CA_FILE',
  'METRICS_PORT',
  'METRICS_HOST',
]

/** Reads the process environment, with `.env` in the working directory filling unset names. */
export function readEnv(source: NodeJS.ProcessEnv = process.env, dotenv = '.env'): Env {
  const fromFile = existsSync(dotenv) ? parseEnv(readFileSync(dotenv, 'utf8')) : {}
  const env: Env = {}
  for (const name of names) {
    const value = source[name] ?? fromFile[name]
    if (value !== undefined && value !== '') env[name] = value
  }
  return env
}

export interface Config {
  http: {
    host: string
    port: number
    /**
     * Behind a TLS-terminating proxy (TRUST_PROXY): plain HTTP, and only requests forwarded with
     * `X-Forwarded-Proto: https` are served.
     */
    trustProxy: boolean
    /**
     * Which X-Forwarded-For entries the proxies wrote, when behind one: the last `n` (a hop
     * count), or those written by the proxies at these addresses (CIDR ranges, or proxy-addr's
     * `loopback`, `linklocal`, `uniquelocal`). The client's address is the entry just before.
     */
    proxy?: number | string[]
    /** Origin written into Link headers; undefined means https://HOST:<listening port>. */
    publicUrl?: string
    tls?: { cert: string; key: string }
  }
  dataDir: string
  db:
    | { kind: 'sqlite'; file: string }
    | { kind: 'postgres'; url: string; poolSize: number; schema?: string }
  redis?: { url: string; keyPrefix: string }
  scopesFile: string
  signingKeys?: string
  rateLimitPerMinute: number
  logLevel: string
  /** Requests are shed (503) while the event loop runs later than this on average; 0: never. */
  shedDelayMs: number
  dashboard: {
    /** Anyone may create an account at /account/sign-up; otherwise accounts come by invite. */
    signup: boolean
    /** Every member of every account signs in with a second factor (or SSO, a portal link). */
    require2fa: boolean
    /** Origins a portal link's `returnUrl` may lead to (https only). */
    portalReturnOrigins: string[]
    /** Single sign-on through an OpenID Connect provider. */
    oidc?: {
      issuer: string
      clientId: string
      clientSecret: string
      /** The provider's name on the sign-in button. */
      name: string
      /** People who have signed in through it may not use a password any more. */
      only: boolean
      /** PEM certificate authorities trusted for the provider besides the system's. */
      caFile?: string
    }
  }
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
}

export class ConfigError extends Error {}

/**
 * A system error's reason without its code and path (`no such file or directory`), or the first
 * line of any other error's message: for one-line ConfigErrors that name the file themselves.
 */
export function systemReason(err: unknown): string {
  const message = String((err as Error)?.message ?? err).split('\n')[0] ?? ''
  const system = /^E[A-Z]+: (.*?)(?:, \w+ '.*')?$/.exec(message)
  return system?.[1] ?? message
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function integer(
  name: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
) {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${value}"`)
  }
  return n
}

/** `1` / `true` or `0` / `false`; unset is false. */
function flag(name: string, value: string | undefined) {
  if (value === undefined || value === '0' || value === 'false') return false
  if (value === '1' || value === 'true') return true
  throw new ConfigError(`${name} must be 1 or 0, got "${value}"`)
}

/** Names proxy-addr (Fastify's trustProxy) gives to address ranges. */
const proxyRangeNames = ['loopback', 'linklocal', 'uniquelocal']
const trustProxyForms =
  'a number of proxies (0, 1, 2, ...) or their addresses (CIDR ranges, loopback, linklocal, uniquelocal)'

/** An address, or a CIDR range of at least one bit (`0.0.0.0/0` would trust every client). */
function proxyRange(entry: string) {
  if (proxyRangeNames.includes(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (rest.length > 0 || family === 0) return false
  if (prefix === undefined) return true
  const bits = Number(prefix)
  return /^\d{1,3}$/.test(prefix) && bits >= 1 && bits <= (family === 4 ? 32 : 128)
}

/**
 * TRUST_PROXY: unset, `0` or `false` is no proxy; `1` or `true` one proxy (the client address
 * is the last X-Forwarded-For entry, the one the proxy appended), `n` that many in a row;
 * otherwise the proxies' addresses, comma-separated. Never "trust every hop": the first entry
 * of X-Forwarded-For is whatever the client wrote.
 */
function trustProxy(value: string | undefined): number | string[] | undefined {
  if (value === undefined || value === '0' || value === 'false') return undefined
  if (value === 'true') return 1
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (hops > 16) throw new ConfigError(`TRUST_PROXY must be at most 16 proxies, got "${value}"`)
    return hops === 0 ? undefined : hops
  }
  const ranges = value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '')
  const bad = ranges.find((range) => !proxyRange(range))
  if (ranges.length === 0 || (bad !== undefined && ranges.length === 1)) {
    throw new ConfigError(`TRUST_PROXY must be ${trustProxyForms}, got "${value}"`)
  }
  if (bad !== undefined) {
    throw new ConfigError(`TRUST_PROXY: not an address, a CIDR range or a range name: "${bad}"`)
  }
  return ranges
}

const here = path.dirname(fileURLToPath(import.meta.url))
/** The package root, whether running from src/ (tests) or dist/src/ (build). */
export const packageRoot = path.resolve(
  here,
  here.endsWith(path.join('dist', 'src')) ? '../..' : '..',
)
export const defaultScopesFile = path.join(packageRoot, 'catalog', 'default.yaml')

/** PUBLIC_URL, or the origin HOST and PORT give (the server knows its port once listening). */
export function configuredOrigin(http: Config['http'], port = http.port): string {
  if (http.publicUrl) return http.publicUrl
  return `https://${http.host.includes(':') ? `[${http.host}]` : http.host}:${port}`
}

function leakPolicy(value: string | undefined): Config['leaks']['policy'] {
  const policy = value ?? 'auto'
  if (policy !== 'auto' && policy !== 'revoke' && policy !== 'flag') {
    throw new ConfigError(`LEAKED_TOKENS must be auto, revoke or flag, got "${policy}"`)
  }
  return policy
}

/** Single sign-on: the three OIDC_ settings together, or none of them. */
function oidcConfig(env: Env): Config['dashboard']['oidc'] {
  const given = [env.OIDC_ISSUER, env.OIDC_CLIENT_ID, env.OIDC_CLIENT_SECRET]
  if (given.every((v) => v === undefined)) {
    if (env.OIDC_ONLY !== undefined && flag('OIDC_ONLY', env.OIDC_ONLY)) {
      throw new ConfigError('OIDC_ONLY=1 needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET')
    }
    return undefined
  }
  if (given.some((v) => v === undefined)) {
    throw new ConfigError(
      'OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be given together',
    )
  }
  let issuer: URL
  try {
    issuer = new URL(env.OIDC_ISSUER as string)
  } catch {
    throw new ConfigError(`OIDC_ISSUER is not a URL: "${env.OIDC_ISSUER}"`)
  }
  if (issuer.protocol !== 'https:') throw new ConfigError('OIDC_ISSUER must be an https:// URL')
  return {
    issuer: env.OIDC_ISSUER as string,
    clientId: env.OIDC_CLIENT_ID as string,
    clientSecret: env.OIDC_CLIENT_SECRET as string,
    name: env.OIDC_NAME ?? 'single sign-on',
    only: flag('OIDC_ONLY', env.OIDC_ONLY),
    caFile: env.OIDC_CA_FILE,
  }
}

/** Applies defaults and cross-field checks; throws ConfigError with a one-line reason. */
export function toConfig(env: Env): Config {
  const host = env.HOST ?? '127.0.0.1'
  const port = integer('PORT', env.PORT, 8443, 0, 65535)
  const dataDir = path.resolve(env.DATA_DIR ?? './data')
  if ((env.TLS_CERT === undefined) !== (env.TLS_KEY === undefined)) {
    throw new ConfigError('TLS_CERT and TLS_KEY must be given together')
  }
  const proxy = trustProxy(env.TRUST_PROXY)
  let publicUrl: string | undefined
  if (env.PUBLIC_URL !== undefined) {
    let url: URL
    try {
      url = new URL(env.PUBLIC_URL)
    } catch {
      throw new ConfigError(`PUBLIC_URL is not a URL: "${env.PUBLIC_URL}"`)
    }
    if (url.protocol !== 'https:') throw new ConfigError('PUBLIC_URL must be an https:// URL')
    publicUrl = env.PUBLIC_URL.replace(/\/+$/, '')
  }
  let db: Config['db'] = { kind: 'sqlite', file: path.join(dataDir, 'tessera.db') }
  if (env.DATABASE_URL !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(env.DATABASE_URL)) {
      throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://')
    }
    if (env.DATABASE_SCHEMA !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(env.DATABASE_SCHEMA)) {
      throw new ConfigError('DATABASE_SCHEMA must be 1-63 characters of a-z, 0-9 and _')
    }
    db = {
      kind: 'postgres',
      url: env.DATABASE_URL,
      poolSize: integer('DATABASE_POOL_SIZE', env.DATABASE_POOL_SIZE, 10, 1, 1000),
      schema: env.DATABASE_SCHEMA,
    }
  }
  if (env.REDIS_URL !== undefined && !/^rediss?:\/\//.test(env.REDIS_URL)) {
    throw new ConfigError('REDIS_URL must start with redis:// or rediss://')
  }
  const logLevel = env.LOG_LEVEL ?? 'info'
  if (!logLevels.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(', ')}`)
  }
  const signup = env.DASHBOARD_SIGNUP ?? 'closed'
  if (signup !== 'open' && signup !== 'closed') {
    throw new ConfigError(`DASHBOARD_SIGNUP must be open or closed, got "${signup}"`)
  }
  const portalReturnOrigins = (env.PORTAL_RETURN_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '')
    .map((o) => {
      let url: URL
      try {
        url = new URL(o)
      } catch {
        throw new ConfigError(`PORTAL_RETURN_ORIGINS: not a URL: "${o}"`)
      }
      if (url.protocol !== 'https:') {
        throw new ConfigError(`PORTAL_RETURN_ORIGINS: not an https:// origin: "${o}"`)
      }
      return url.origin
    })
  return {
    http: {
      host,
      port,
      trustProxy: proxy !== undefined,
      proxy,
      publicUrl,
      tls: env.TLS_CERT && env.TLS_KEY ? { cert: env.TLS_CERT, key: env.TLS_KEY } : undefined,
    },
    dataDir,
    db,
    redis: env.REDIS_URL
      ? { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX ?? 'tessera:' }
      : undefined,
    scopesFile: env.SCOPES_FILE ?? defaultScopesFile,
    signingKeys: env.SIGNING_KEYS,
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', env.RATE_LIMIT_PER_MINUTE, 100, 1, 1e9),
    logLevel,
    shedDelayMs: integer('SHED_DELAY_MS', env.SHED_DELAY_MS, 200, 0, 60_000),
    dashboard: {
      signup: signup === 'open',
      require2fa: flag('DASHBOARD_REQUIRE_2FA', env.DASHBOARD_REQUIRE_2FA),
      portalReturnOrigins,
      oidc: oidcConfig(env),
    },
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
    metrics:
      env.METRICS_PORT === undefined
        ? undefined
        : {
            host: env.METRICS_HOST ?? '127.0.0.1',
            port: integer('METRICS_PORT', env.METRICS_PORT, 0, 0, 65535),
          },
  }
}
