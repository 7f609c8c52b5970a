import { BlockList, isIP } from 'node:net'
import { ApiError, fail } from '../errors.js'
import { type NamedLimit, readNamedLimits } from '../ratelimit/named.js'
import type { Scope, ScopeCatalog } from '../scopes/catalog.js'
import { isoTime, parseTimestamp } from '../time.js'
import type { Principal } from './principal.js'

/** Input rules shared by create, create temporary and update. Pure: no I/O. */

export const maxNoteLength = 1024
export const maxAllowedUrls = 100
export const maxUrlLength = 2048

// Scheme optional; host (optionally `*.`-prefixed) of DNS labels or an IPv4 address; optional
// port; optional path. The same shape the web map libraries match a page's URL against.
const urlShape =
  /^(?:https?:\/\/)?(?:\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::(\d{1,5}))?(?:\/\S*)?$/i

/** Trims, checks and de-duplicates allowed URLs; null and [] mean "no restriction". */
export function normalizeAllowedUrls(urls: readonly string[] | null | undefined): string[] | null {
  if (urls === null || urls === undefined) return null
  if (urls.length > maxAllowedUrls) {
    fail('invalidResources', `allowedUrls may hold at most ${maxAllowedUrls} entries`)
  }
  const out = new Set<string>()
  for (const raw of urls) {
    const url = raw.trim()
    const port = urlShape.exec(url)?.[1]
    if (url.length > maxUrlLength || !urlShape.test(url) || (port && Number(port) > 65535)) {
      fail(
        'invalidResources',
        'every allowedUrls entry must be a URL or host name of at most 2048 characters',
      )
    }
    out.add(url)
  }
  return out.size === 0 ? null : [...out]
}

/** How far ahead a permanent token's end of life may be: ten years. */
export const maxLifetimeMs = 10 * 366 * 86_400_000

/**
 * A permanent token's end of life (Tessera's `expiresAt`) as epoch ms: a timestamp in the future,
 * at most ten years ahead, else `resources are invalid`; null (remove it) and undefined as given.
 */
export function normalizeExpiresAt(value: unknown, now: number): number | null | undefined {
  if (value === undefined || value === null) return value
  const at = typeof value === 'string' ? parseTimestamp(value) : undefined
  if (at === undefined) return fail('invalidResources', 'expiresAt must be an ISO 8601 timestamp')
  if (at <= now) fail('invalidResources', 'expiresAt must be in the future')
  if (at > now + maxLifetimeMs) {
    fail('invalidResources', 'expiresAt may be at most 10 years in the future')
  }
  return at
}

/**
 * A pk or sk's own named rate limits (Tessera's `ratelimits`) as stored: each `{name, limit,
 * duration, cost?}` as readNamedLimits reads it, else `resources are invalid` with its sentence.
 * An empty list is none (null), as is null (update: remove them); undefined as given.
 */
export function normalizeRatelimits(value: unknown): NamedLimit[] | null | undefined {
  if (value === undefined || value === null) return value
  const limits = readNamedLimits(value, 'ratelimits')
  if (typeof limits === 'string') return fail('invalidResources', limits)
  return limits.length === 0 ? null : limits
}

export const maxAllowedIps = 100

/**
 * A token's IP ranges as stored: addresses and CIDR blocks, IPv4 or IPv6, each in its canonical
 * text (IPv6 compressed and lowercased; a /32 or /128 block written as its address), without
 * repeats; null when none. Refused with `resources are invalid` when one is not a range.
 */
export function normalizeAllowedIps(list: readonly unknown[] | null | undefined): string[] | null {
  if (list === null || list === undefined) return null
  if (list.length > maxAllowedIps) {
    fail('invalidResources', `allowedIps may hold at most ${maxAllowedIps} entries`)
  }
  const out = new Set<string>()
  for (const raw of list) {
    const range = typeof raw === 'string' ? canonicalRange(raw.trim()) : undefined
    if (range === undefined) {
      return fail(
        'invalidResources',
        'every allowedIps entry must be an IPv4 or IPv6 address or CIDR block',
      )
    }
    out.add(range)
  }
  return out.size === 0 ? null : [...out]
}

function canonicalRange(text: string): string | undefined {
  const [address = '', prefix, ...rest] = text.split('/')
  const family = isIP(address)
  if (rest.length > 0 || family === 0) return undefined
  const canonical = family === 4 ? address : new URL(`http://[${address}]`).hostname.slice(1, -1)
  if (prefix === undefined) return canonical
  if (!/^\d{1,3}$/.test(prefix)) return undefined
  const bits = Number(prefix)
  const max = family === 4 ? 32 : 128
  if (bits > max) return undefined
  return bits === max ? canonical : `${canonical}/${bits}`
}

/** Whether an address is in one of the ranges; an IPv4-mapped IPv6 address counts as IPv4. */
export function ipMatcher(ranges: readonly string[]): (ip: string) => boolean {
  const list = new BlockList()
  for (const range of ranges) {
    const [address = '', prefix] = range.split('/')
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6'
    if (prefix === undefined) list.addAddress(address, type)
    else list.addSubnet(address, Number(prefix), type)
  }
  return (ip) => {
    const address = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip
    const family = isIP(address)
    return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6')
  }
}

export const dedupe = (scopes: readonly string[]) => [...new Set(scopes)]

const idSets = new WeakMap<readonly Scope[], Set<string>>()
/** The ids of a catalog's cached list of scopes (see ScopeCatalog.availableTo), built once. */
function idsOf(scopes: readonly Scope[]): Set<string> {
  let ids = idSets.get(scopes)
  if (ids === undefined) {
    ids = new Set(scopes.map((s) => s.id))
    idSets.set(scopes, ids)
  }
  return ids
}

/**
 * Every requested scope must be available to the account and held by the authorizing token
 * (scopes only ever narrow). Returns the catalog entries, de-duplicated.
 */
export function checkScopes(
  requested: readonly string[],
  available: readonly Scope[],
  principal: Principal,
  catalog: ScopeCatalog,
): Scope[] {
  const availableIds = idsOf(available)
  return dedupe(requested).map((id) => {
    const scope = catalog.get(id)
    if (scope === undefined || !availableIds.has(id)) {
      return fail('invalidScopes', `${JSON.stringify(id)} is not available to this account`)
    }
    if (!principal.scopes.has(id)) {
      return fail('invalidScopes', `the authorizing token does not hold ${id}`)
    }
    return scope
  })
}

/** Whether a create's body asks for a temporary token: it has `expires` (CONTRACT.md section 4). */
export const asksTemporary = (body: unknown): boolean =>
  typeof body === 'object' && body !== null && 'expires' in body

/** The start of every refusal of a rolled token's string that works out its grace. */
export const retiringSince = (retiresAt: number) =>
  `the authorizing token was rolled and works until ${isoTime(retiresAt)}`

/**
 * Whether the authorizing token may create a token of this kind at all, answered before its
 * body is looked at: the contract's 404 `Not found` for a kind of token that may not (CONTRACT.md
 * section 4). A permanent token only by an sk, and not by a rolled one's old string in its grace:
 * like a temporary credential, that string must not mint a permanent one, which would keep
 * whoever holds it (the reason it was rolled) in the account past the grace, free to delete the
 * token that replaced it. A temporary token by an sk or tk; what that string makes of one is
 * bounded by `TokenCreation.temporary`. The route, the create answered ahead of Fastify and the
 * service all ask this.
 */
export function creationRefusal(principal: Principal, temporary: boolean): ApiError | undefined {
  if (temporary) {
    if (principal.usage === 'pk') {
      return new ApiError('notFound', 'a public token may not create temporary tokens')
    }
    return principal.child
      ? new ApiError(
          'notFound',
          'a child token may not create temporary tokens: they would outlive it; make a child token',
        )
      : undefined
  }
  if (principal.usage !== 'sk') {
    return new ApiError('notFound', 'only a secret token may create a permanent token')
  }
  if (principal.retiresAt !== undefined) {
    return new ApiError(
      'notFound',
      `${retiringSince(principal.retiresAt)}: a rolled token cannot create a permanent token; use the token that replaced it`,
    )
  }
  return undefined
}
