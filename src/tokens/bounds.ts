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

type Scheme = 'http' | 'https'

const entryShape = /^(?:(https?):\/\/)?(\*\.)?([a-z0-9.-]+)(?::(\d{1,5}))?(\/.*)?$/i
const defaultPort = (scheme: Scheme) => (scheme === 'https' ? 443 : 80)

/**
 * The parts of an allowedUrls entry as a verifier matches pages against it
 * (packages/verifier/src/allowed-urls.ts): the schemes it admits, `*.`, the host without case,
 * its port or none (a page's default port then), its path normalized as a page's URL is (dot
 * segments and percent-encoding resolved; no trailing slash; '' for every path).
 */
function urlParts(entry: string) {
  const m = entryShape.exec(entry.trim())
  if (m === null) return undefined
  const [, scheme, star, host = '', port, rawPath] = m
  let path = ''
  if (rawPath !== undefined) {
    path = new URL(rawPath, 'http://h').pathname
    if (path.endsWith('/')) path = path.slice(0, -1)
  }
  const schemes: Scheme[] =
    scheme === undefined ? ['http', 'https'] : [scheme.toLowerCase() as Scheme]
  return {
    schemes,
    wildcard: star !== undefined,
    host: host.toLowerCase(),
    port: port === undefined ? undefined : Number(port),
    path,
  }
}

/**
 * Whether every page `child` admits is one `parent` admits, as a verifier matches them: each of
 * its schemes among the parent's, on the same port for each (a missing port is the scheme's
 * default); the parent's host, or under its `*.` (which covers subdomains, not the host
 * itself); a path on the parent's path or below it, on segment boundaries.
 */
export function urlWithin(child: string, parent: string): boolean {
  const c = urlParts(child)
  const p = urlParts(parent)
  if (c === undefined || p === undefined) return false
  for (const scheme of c.schemes) {
    if (!p.schemes.includes(scheme)) return false
    if ((c.port ?? defaultPort(scheme)) !== (p.port ?? defaultPort(scheme))) return false
  }
  if (p.wildcard) {
    if (!(c.wildcard && c.host === p.host) && !c.host.endsWith(`.${p.host}`)) return false
  } else if (c.wildcard || c.host !== p.host) return false
  if (p.path === '') return true
  return c.path === p.path || c.path.startsWith(`${p.path}/`)
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
