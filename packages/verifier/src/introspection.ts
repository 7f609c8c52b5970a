import { BlockList, isIP } from 'node:net'
import { AllowedUrls } from './allowed-urls.js'
import { type FailureReason, refusals, type TokenUsage } from './answers.js'
import type { Pool } from './credits.js'
import type { Entry } from './entry.js'
import type { LimitPool } from './ratelimits.js'
import type { MeterKey } from './usage.js'

const usages = new Set<string>(['pk', 'sk', 'tk'])
const inactiveCodes = new Set<string>([
  'TokenMalformed',
  'TokenInvalid',
  'TokenExpired',
  'TokenRevoked',
])
const noScopes: ReadonlySet<string> = new Set()

/** Token strings as Tessera issues them: anything else is TokenMalformed without asking. */
const tokenShape = /^(?:pk|sk|tk)\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/
export const maxTokenLength = 4096
export const plausibleToken = (token: string) =>
  token.length <= maxTokenLength && tokenShape.test(token)

/** Thrown for an introspection answer of an unexpected shape: treated like no answer. */
export class UnexpectedAnswerError extends Error {
  override name = 'UnexpectedAnswerError'
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)
const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((s) => typeof s === 'string')

/**
 * The account and id a token string names (its payload, unverified): for dropping it later, and
 * for counting an expired or revoked one (whose signature Tessera verified).
 */
function named(token: string): { account?: string; id?: string } {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())
    return {
      ...(typeof payload?.u === 'string' ? { account: payload.u } : {}),
      ...(typeof payload?.a === 'string' ? { id: payload.a } : {}),
    }
  } catch {
    return {}
  }
}

export interface EntryTimes {
  now: number
  /** Longest a pk/sk answer is kept. */
  maxAgeMs: number
  /** How long a refusal is kept. */
  negativeTtlMs: number
  /** The counting key of an account and token id (shared by the answers naming them). */
  meterKey(account: string, token: string): MeterKey
  /** The credits held here for a token (with its id) or an account's tk. */
  pool(account: string, token: string | undefined): Pool
  /** The rate limits held here for a token (with its id) or an account's tk, of these limits. */
  limits(account: string, token: string | undefined, shape: string): LimitPool
}

/**
 * Whom a refusal is counted for: an expired or revoked token's signature was verified, so its
 * payload names its account (and a pk's or sk's id), unless Tessera answered `unowned` (not made
 * in the account that has that name now: a former one's string); a malformed or invalid string
 * names nobody (an attacker must not charge refusals to someone else's account). Tessera checks
 * a pk's or sk's again when it takes the report; a tk's it cannot (its row names no token).
 */
function refusalMeter(
  token: string,
  reason: FailureReason,
  times: EntryTimes,
  unowned = false,
): MeterKey {
  if (unowned || (reason !== 'TokenExpired' && reason !== 'TokenRevoked')) {
    return times.meterKey('', '')
  }
  const { account, id } = named(token)
  if (account === undefined) return times.meterKey('', '')
  return times.meterKey(account, id !== undefined && !token.startsWith('tk.') ? id : '')
}

/** The credits a token spends when the answer says it carries some (its own or its account's). */
function poolOf(
  credits: unknown,
  account: string,
  id: string | undefined,
  times: EntryTimes,
): Pool | undefined {
  if (typeof credits !== 'object' || credits === null) return undefined
  const c = credits as { token?: unknown; account?: unknown }
  if (typeof c.token !== 'number' && typeof c.account !== 'number') return undefined
  return times.pool(account, id)
}

/**
 * The rate limits a token's verifications take when the answer lists some (Tessera lists them
 * when a plan, the account or the token sets any; a Tessera before named limits, never): their
 * names and sizes make the pool's shape, so that other limits take another pool.
 */
function limitsOf(
  ratelimits: unknown,
  account: string,
  id: string | undefined,
  times: EntryTimes,
): LimitPool | undefined {
  if (!Array.isArray(ratelimits) || ratelimits.length === 0) return undefined
  const shape = ratelimits
    .map((l: { name?: unknown; limit?: unknown }) => `${String(l?.name)}=${String(l?.limit)}`)
    .join(',')
  return times.limits(account, id, shape)
}

/** A refusal entry (not asked, or Tessera said inactive). */
export function refusalEntry(
  token: string,
  reason: FailureReason,
  times: EntryTimes,
  unowned = false,
): Entry {
  const { account, id } = named(token)
  return {
    token,
    answer: refusals[reason],
    scopes: noScopes,
    urls: undefined,
    ips: undefined,
    expiresAt: times.now + times.negativeTtlMs,
    id,
    account,
    meter: refusalMeter(token, reason, times, unowned),
    pool: undefined,
    limits: undefined,
  }
}

/** Turns `POST /admin/v1/introspect`'s answer into an entry; throws UnexpectedAnswerError. */
export function entryOf(token: string, body: unknown, times: EntryTimes): Entry {
  const b = body as Record<string, unknown> | null
  if (typeof b !== 'object' || b === null || typeof b.active !== 'boolean') {
    throw new UnexpectedAnswerError('introspection answered no "active"')
  }
  if (!b.active) {
    const code = typeof b.code === 'string' && inactiveCodes.has(b.code) ? b.code : 'TokenInvalid'
    return refusalEntry(token, code as FailureReason, times, b.unowned === true)
  }
  const { username, usage, scope, id, client_id, iat, exp, allowedUrls, allowedIps, credits } = b
  const { ratelimits } = b
  if (
    typeof username !== 'string' ||
    typeof usage !== 'string' ||
    !usages.has(usage) ||
    typeof scope !== 'string' ||
    (id !== undefined && typeof id !== 'string') ||
    (exp !== undefined && !isNumber(exp)) ||
    (allowedUrls !== undefined && allowedUrls !== null && !isStringArray(allowedUrls)) ||
    (allowedIps !== undefined && !isStringArray(allowedIps))
  ) {
    throw new UnexpectedAnswerError('introspection answered an active token of an unknown shape')
  }
  const scopes = Object.freeze(scope.split(' ').filter((s) => s !== ''))
  const urls = Array.isArray(allowedUrls) && allowedUrls.length > 0 ? allowedUrls : undefined
  const answer = Object.freeze({
    valid: true as const,
    account: username,
    usage: usage as TokenUsage,
    scopes,
    id: typeof id === 'string' ? id : undefined,
    clientId: typeof client_id === 'string' ? client_id : undefined,
    iat: isNumber(iat) ? iat : undefined,
    exp: isNumber(exp) ? exp : undefined,
    allowedUrls: urls === undefined ? undefined : Object.freeze([...urls]),
    allowedIps: Array.isArray(allowedIps) ? Object.freeze([...allowedIps]) : undefined,
  })
  // A tk is stateless: good until its exp (unless its account changes); pk/sk until an event,
  // or until its exp when it has one (a rolled token's end).
  let expiresAt = times.now + times.maxAgeMs
  if (usage === 'tk') expiresAt = isNumber(exp) ? Math.min(exp * 1000, expiresAt) : times.now
  else if (isNumber(exp)) expiresAt = Math.min(exp * 1000, expiresAt)
  return {
    token,
    answer,
    scopes: new Set(scopes),
    urls: urls === undefined ? undefined : new AllowedUrls(urls),
    ips: Array.isArray(allowedIps) ? ipMatcher(allowedIps) : undefined,
    expiresAt,
    id: answer.id,
    account: username,
    meter: times.meterKey(username, usage === 'tk' ? '' : (answer.id ?? '')),
    pool: poolOf(credits, username, answer.id, times),
    limits: limitsOf(ratelimits, username, usage === 'tk' ? undefined : answer.id, times),
  }
}

/**
 * Whether an address is in one of Tessera's ranges; an IPv4-mapped IPv6 address counts as IPv4.
 * The same as Tessera's own (src/tokens/rules.ts): this package is published on its own.
 */
export function ipMatcher(ranges: readonly string[]): (ip: string) => boolean {
  const list = new BlockList()
  for (const range of ranges) {
    const [address = '', prefix] = range.split('/')
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6'
    if (isIP(address) === 0) continue
    if (prefix === undefined) list.addAddress(address, type)
    else list.addSubnet(address, Number(prefix), type)
  }
  return (ip) => {
    const address = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip
    const family = isIP(address)
    return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6')
  }
}
