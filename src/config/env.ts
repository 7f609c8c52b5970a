import { existsSync, readFileSync } from 'node:fs'
import { parseEnv } from 'node:util'
import { otelNames } from '../telemetry/config.js'

const names = [
  'PORT',
  'HOST',
  'DATA_DIR',
  'TLS_CERT',
  'TLS_KEY',
  'TLS_MIN_VERSION',
  'TLS_CIPHERS',
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
  'USAGE_MINUTE_RETENTION_DAYS',
  'USAGE_HOUR_RETENTION_DAYS',
  'USAGE_DAY_RETENTION_DAYS',
  'USAGE_FLUSH_SECONDS',
  'CREDIT_THRESHOLDS',
  'VERIFICATION_LOG',
  'VERIFICATION_LOG_RETENTION_DAYS',
  'VERIFICATION_LOG_BUFFER',
  'SMTP_URL',
  'MAIL_FROM',
  'INVITATION_MAILS_PER_ACCOUNT',
  'INVITATION_MAILS_PER_ADDRESS',
  'WORKERS',
  'WORKER_TIMEOUT_SECONDS',
  'CHILD_TOKEN_DEPTH',
  'EXCHANGE_CA_FILE',
  'EXCHANGE_ALLOW_PRIVATE',
] as const

/** Every environment variable Tessera reads, as given. Nothing below context.ts reads process.env. */
export type Env = { [Name in (typeof names)[number]]?: string } & {
  /** OpenTelemetry's standard variables (src/telemetry/config.ts reads them). */
  [name: `OTEL_${string}`]: string | undefined
}

/** Reads the process environment, with `.env` in the working directory filling unset names. */
export function readEnv(source: NodeJS.ProcessEnv = process.env, dotenv = '.env'): Env {
  const fromFile = existsSync(dotenv) ? parseEnv(readFileSync(dotenv, 'utf8')) : {}
  const env: Env = {}
  for (const name of [...names, ...otelNames] as (keyof Env)[]) {
    const value = source[name] ?? fromFile[name]
    if (value !== undefined && value !== '') env[name] = value
  }
  return env
}
