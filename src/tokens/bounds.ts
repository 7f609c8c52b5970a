import { BlockList, isIP } from 'node:net'
import type { TokenRecord } from '../db/token-document.js'
import { fail } from '../errors.js'
import { mergeLimits, type NamedLimit } from '../ratelimit/named.js'
import { isoTime } from '../time.js'

/**
 * What a child token may never exceed of its parent's (docs/machines.md): its scopes, allowed
 * URLs, IP ranges, end of life and named rate limits. Pure: no I/O.
 */
export type Bounds = Pick<
  TokenRecord,
  'scopes' | 'allowedUrls' | 'allowedIps' | 'expiresAt' | 'ratelimits'
>

/** The first way `child` is wider than `parent`, as a sentence; undefined when it is within. */
export function widerThan(child: Bounds, parent: Bounds): string | undefined {
  const held = new Set(parent.scopes)
  const scope = child.scopes.find((s) => !held.has(s))
  if (scope !== undefined) return `the parent token does not hold ${scope}`
  if (parent.allowedUrls !== null) {
    if (child.allowedUrls === null) return 'the parent token is restricted to allowedUrls'
    const outside = child.allowedUrls.find((c) => !parent.allowedUrls?.some((p) => urlWithin(c, p)))
    if (outside !== undefined) return `${outside} is outside the parent token's allowedUrls`
  }
  if (parent.allowedIps != null) {
    if (child.allowedIps == null) return 'the parent token is restricted to allowedIps'
    const outside = child.allowedIps.find((c) => !parent.allowedIps?.some((p) => rangeWithin(c, p)))
    if (outside !== undefined) return `${outside} is outside the parent token's allowedIps`
  }
  if (parent.expiresAt != null) {
    if (child.expiresAt == null || child.expiresAt > parent.expiresAt) {
      return `expiresAt may be no later than the parent token's, ${isoTime(parent.expiresAt)}`
    }
  }
  for (const limit of parent.ratelimits ?? []) {
    const own = child.ratelimits?.find((l) => l.name === limit.name)
    if (own === undefined || looser(own, limit)) {
      return `the rate limit ${limit.name} may be no looser than the parent token's`
    }
  }
  return undefined
}

/** Whether `own` lets more through than `bound`: more per window, a shorter one, cheaper uses. */
function looser(own: NamedLimit, bound: NamedLimit): boolean {
  if (own.limit > bound.limit || own.duration < bound.duration) return true
  // A limit without cost counts what the caller says; one with a cost counts that alone.
  if (bound.cost === undefined) return own.cost !== undefined
  return own.cost === undefined || own.cost < bound.cost
}

/** A child's fields as its create asked them, each as normalized (undefined: not given). */
export interface AskedBounds {
  scopes: string[]
  allowedUrls: string[] | null | undefined
  allowedIps: string[] | null | undefined
  expiresAt: number | null | undefined
  ratelimits: NamedLimit[] | null | undefined
}

/**
 * A child's bounds: what was asked, and the parent's for what was not (its URLs, IP ranges and
 * end; its named limits under the child's own of the same name). Refused (422) when wider than
 * any ancestor, the parent first.
 */
export function childBounds(asked: AskedBounds, ancestors: readonly TokenRecord[]): Bounds {
  const [parent] = ancestors
  if (parent === undefined) throw new Error('a child token needs a parent')
  const bounds: Bounds = {
    scopes: asked.scopes,
    allowedUrls: asked.allowedUrls === undefined ? parent.allowedUrls : asked.allowedUrls,
    allowedIps: asked.allowedIps === undefined ? (parent.allowedIps ?? null) : asked.allowedIps,
    expiresAt: asked.expiresAt === undefined ? (parent.expiresAt ?? null) : asked.expiresAt,
    ratelimits: inheritedLimits(asked.ratelimits, parent.ratelimits),
  }
  for (const ancestor of ancestors) {
    const wider = widerThan(bounds, ancestor)
    if (wider === undefined) continue
    const kind = wider.startsWith('the parent token does not hold')
      ? 'invalidScopes'
      : 'invalidResources'
    const whose = ancestor === parent ? 'the parent token' : `the token ${ancestor.id} above it`
    return fail(kind, wider.replace('the parent token', whose))
  }
  return bounds
}

/** The parent's limits, each replaced by the child's own of its name, then the child's others. */
function inheritedLimits(
  own: NamedLimit[] | null | undefined,
  parents: NamedLimit[] | null | undefined,
): NamedLimit[] | null {
  const merged = mergeLimits(parents ?? undefined, own ?? undefined)
  return merged.length === 0 ? null : merged
}

/** The parts of an allowedUrls entry (CONTRACT.md section 3): scheme, `*.`, host, port, path. */
function urlParts(entry: string) {
  const m = /^(?:(https?):\/\/)?(\*\.)?([^/:]+)(?::(\d+))?(\/.*)?$/i.exec(entry)
  return {
    scheme: m?.[1]?.toLowerCase(),
    wildcard: m?.[2] !== undefined,
    host: (m?.[3] ?? '').toLowerCase(),
    port: m?.[4],
    path: m?.[5],
  }
}

/**
 * Whether every URL entry `child` admits is one `parent` admits: the same scheme if the parent
 * names one; the parent's host, or under its `*.`; the same port if it names one; a path that
 * begins with its path if it has one.
 */
export function urlWithin(child: string, parent: string): boolean {
  const c = urlParts(child)
  const p = urlParts(parent)
  if (p.scheme !== undefined && c.scheme !== p.scheme) return false
  if (p.wildcard) {
    // `*.` covers the subdomains, not the host itself.
    if (!(c.wildcard && c.host === p.host) && !c.host.endsWith(`.${p.host}`)) return false
  } else if (c.wildcard || c.host !== p.host) return false
  if (p.port !== undefined && c.port !== p.port) return false
  if (p.path !== undefined && !(c.path ?? '/').startsWith(p.path)) return false
  return true
}

/** Whether the addresses of range `child` (canonical, normalizeAllowedIps) all lie in `parent`. */
export function rangeWithin(child: string, parent: string): boolean {
  const [cAddress = '', cBits] = child.split('/')
  const [pAddress = '', pBits] = parent.split('/')
  const family = isIP(cAddress)
  if (family === 0 || family !== isIP(pAddress)) return false
  const max = family === 4 ? 32 : 128
  const childBits = cBits === undefined ? max : Number(cBits)
  const parentBits = pBits === undefined ? max : Number(pBits)
  if (childBits < parentBits) return false
  const type = family === 4 ? 'ipv4' : 'ipv6'
  const list = new BlockList()
  list.addSubnet(pAddress, parentBits, type)
  return list.check(cAddress, type)
}
