/**
 * A token's allowedUrls, matched against the URL a browser says a request comes from.
 *
 * Entry forms (Tessera's contract, section 3): an absolute http/https URL or a bare host name,
 * either with an optional port and path; a host may begin with `*.` to cover its subdomains.
 * - scheme: `https://h` allows only https pages, `http://h` only http; a bare host allows both;
 * - host: compared without case; `*.example.com` covers `a.example.com` and `a.b.example.com`,
 *   not `example.com` itself (list both to allow both);
 * - port: as given, else the default port of the page's scheme (80, 443), as an origin does;
 * - path: a prefix on segment boundaries: `/maps` covers `/maps`, `/maps/` and `/maps/x`, not
 *   `/mapsx`; no path (or `/`) covers every path; a query or fragment in an entry is ignored.
 * The page is the request's `Origin` header, else its `Referer`. An Origin has no path: an entry
 * with a path is then checked against the Referer, when it is of the same origin. A request with
 * neither header (or `Origin: null` and no Referer) matches no entry.
 */

interface Rule {
  scheme: 'http' | 'https' | undefined
  host: string
  wildcard: boolean
  port: number | undefined
  /** '' covers every path; otherwise without a trailing slash. */
  path: string
}

interface Page {
  scheme: 'http' | 'https'
  host: string
  port: number
  path: string
}

const entryShape = /^(?:(https?):\/\/)?(\*\.)?([a-z0-9.-]+)(?::(\d{1,5}))?(\/.*)?$/i
const defaultPort = (scheme: 'http' | 'https') => (scheme === 'https' ? 443 : 80)
/** Origin/referer strings remembered per token: beyond this, the memo starts over. */
const memoLimit = 256

/** Parses one entry; undefined for text that is no entry form (it then matches nothing). */
export function parseEntry(entry: string): Rule | undefined {
  const m = entryShape.exec(entry.trim())
  if (m === null) return undefined
  const [, scheme, star, host = '', port, rawPath] = m
  let path = ''
  if (rawPath !== undefined) {
    // The same percent-encoding and dot-segment handling as the page's URL gets.
    path = new URL(rawPath, 'http://h').pathname
    if (path.endsWith('/')) path = path.slice(0, -1)
  }
  return {
    scheme: scheme === undefined ? undefined : (scheme.toLowerCase() as 'http' | 'https'),
    host: host.toLowerCase(),
    wildcard: star !== undefined,
    port: port === undefined ? undefined : Number(port),
    path,
  }
}

function parsePage(text: string): Page | undefined {
  if (!URL.canParse(text)) return undefined
  const url = new URL(text)
  const scheme = url.protocol === 'https:' ? 'https' : url.protocol === 'http:' ? 'http' : undefined
  if (scheme === undefined) return undefined
  const port = url.port === '' ? defaultPort(scheme) : Number(url.port)
  return { scheme, host: url.hostname, port, path: url.pathname }
}

function sameOrigin(a: Page, b: Page): boolean {
  return a.scheme === b.scheme && a.host === b.host && a.port === b.port
}

function matches(rule: Rule, page: Page, path: string | undefined): boolean {
  if (rule.scheme !== undefined && rule.scheme !== page.scheme) return false
  if ((rule.port ?? defaultPort(page.scheme)) !== page.port) return false
  if (rule.wildcard) {
    if (!page.host.endsWith(`.${rule.host}`)) return false
  } else if (page.host !== rule.host) return false
  if (rule.path === '') return true
  if (path === undefined) return false
  return path === rule.path || path.startsWith(`${rule.path}/`)
}

/** The decision for one page, computed (use AllowedUrls to have it remembered). */
export function allowedBy(
  rules: readonly Rule[],
  origin: string | undefined,
  referer: string | undefined,
): boolean {
  const hasOrigin = origin !== undefined && origin !== '' && origin !== 'null'
  const source = hasOrigin ? origin : referer
  if (source === undefined || source === '') return false
  const page = parsePage(source)
  if (page === undefined) return false
  let path: string | undefined = page.path
  if (hasOrigin) {
    // An Origin carries no path: take it from a Referer of the same origin, if any.
    const ref = referer ? parsePage(referer) : undefined
    path = ref !== undefined && sameOrigin(ref, page) ? ref.path : undefined
  }
  for (const rule of rules) if (matches(rule, page, path)) return true
  return false
}

/** A token's entries, parsed once, with the decisions for the pages seen remembered. */
export class AllowedUrls {
  private readonly rules: Rule[]
  private readonly hasPaths: boolean
  private readonly byOrigin = new Map<string, boolean>()
  private readonly byReferer = new Map<string, boolean>()
  private readonly byBoth = new Map<string, boolean>()

  constructor(readonly entries: readonly string[]) {
    this.rules = []
    for (const entry of entries) {
      const rule = parseEntry(entry)
      if (rule !== undefined) this.rules.push(rule)
    }
    this.hasPaths = this.rules.some((r) => r.path !== '')
  }

  allows(origin: string | undefined, referer: string | undefined): boolean {
    let memo: Map<string, boolean>
    let key: string
    if (origin !== undefined && origin !== '' && origin !== 'null') {
      // Without path entries the Referer cannot change the decision.
      if (this.hasPaths && referer) {
        memo = this.byBoth
        key = `${origin} ${referer}`
      } else {
        memo = this.byOrigin
        key = origin
      }
    } else if (referer !== undefined && referer !== '') {
      memo = this.byReferer
      key = referer
    } else {
      return false
    }
    const known = memo.get(key)
    if (known !== undefined) return known
    const decision = allowedBy(this.rules, origin, referer)
    if (memo.size >= memoLimit) memo.clear()
    memo.set(key, decision)
    return decision
  }
}
