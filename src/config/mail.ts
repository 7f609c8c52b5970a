import type { Env } from './env.js'
import { ConfigError } from './error.js'
import { integer } from './values.js'

export interface MailConfig {
  /** Where mail is handed over; `secure` is TLS from the first byte (smtps://). */
  smtp: { host: string; port: number; secure: boolean; user?: string; pass?: string }
  /** The From header of every message. */
  from: string
  /** Invitations mailed in 24 hours, at most: an account's, and to one address from any. */
  invitations: { perAccount: number; perAddress: number }
}

// The value may hold a password: messages name its parts, never echo it.
const shape = 'smtp://[user:password@]host[:port] or smtps://...'

/** A percent-encoded user or password, decoded; a malformed escape is a ConfigError. */
function decoded(part: string, what: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    throw new ConfigError(`SMTP_URL: the ${what} has a malformed %-escape`)
  }
}

function smtp(value: string): MailConfig['smtp'] {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ConfigError(`SMTP_URL is not a URL: expected ${shape}`)
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new ConfigError(`SMTP_URL must be ${shape}, got a ${url.protocol}// URL`)
  }
  if (url.hostname === '') throw new ConfigError(`SMTP_URL has no host: expected ${shape}`)
  if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') {
    throw new ConfigError('SMTP_URL takes no path, query or fragment')
  }
  if ((url.username === '') !== (url.password === '')) {
    throw new ConfigError('SMTP_URL must give a user and a password together, or neither')
  }
  const secure = url.protocol === 'smtps:'
  const config: MailConfig['smtp'] = {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    // 587 (submission) rather than 25: the port a mail provider gives an application.
    port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
    secure,
  }
  if (url.username !== '') {
    config.user = decoded(url.username, 'user')
    config.pass = decoded(url.password, 'password')
  }
  return config
}

const address = /^[^\s<>@",;]+@[^\s<>@",;]+$/

/** A bare address or `Name <address>`, on one line. */
function from(value: string): string {
  const named = /^([^<>\r\n]*)<([^<>]*)>$/.exec(value.trim())
  if (!address.test(named?.[2] ?? value.trim()) || /[\r\n]/.test(value)) {
    throw new ConfigError(
      `MAIL_FROM must be an address or "Name <address>", got "${value.replace(/[\r\n]/g, ' ')}"`,
    )
  }
  return value.trim()
}

/**
 * SMTP_URL and MAIL_FROM; no mail at all when SMTP_URL is unset. The default sender is at
 * PUBLIC_URL's host, so that replies and bounces go somewhere the operator recognises.
 */
export function mailConfig(env: Env, publicUrl: string | undefined): MailConfig | undefined {
  const sender =
    env.MAIL_FROM === undefined
      ? `Tessera <tessera@${publicUrl === undefined ? 'localhost' : new URL(publicUrl).hostname}>`
      : from(env.MAIL_FROM)
  // Invitations mail any address an owner types (and with open sign-up anyone is an owner):
  // a few a day, so that the operator's sender is nobody's mass mailer.
  const invitations = {
    perAccount: integer(
      'INVITATION_MAILS_PER_ACCOUNT',
      env.INVITATION_MAILS_PER_ACCOUNT,
      20,
      0,
      1e6,
    ),
    perAddress: integer(
      'INVITATION_MAILS_PER_ADDRESS',
      env.INVITATION_MAILS_PER_ADDRESS,
      3,
      0,
      1e6,
    ),
  }
  if (env.SMTP_URL === undefined) return undefined
  return { smtp: smtp(env.SMTP_URL), from: sender, invitations }
}
