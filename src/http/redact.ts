import type { FastifyInstance } from 'fastify'

/**
 * Secrets kept out of every log line, by two rules that follow the router and the query parser
 * rather than the raw text, so that no spelling the server accepts slips through.
 *
 * Paths: a route parameter named `:secret` holds one (portal links, invitations, setup links).
 * The app hands every route it declares to `redactSecretRoutes` (an `onRoute` hook), so a new
 * route with a `:secret` is redacted without being listed anywhere: from the parameter on, the
 * path is `[redacted]`, whatever follows it. A path is compared percent-decoded (the router
 * decodes it before matching: `/account/%73etup/<secret>` is a setup link), with any number of
 * slashes, ignoring case, and anywhere in the text (an absolute URL, a word of a message). A
 * path is decoded more than once if it takes that: hiding too much costs nothing.
 *
 * Queries: the query begins at the first `?` or `#`; a value is hidden when its name, decoded
 * (`access%5Ftoken`, `%61ccess_token`, `+` as a space) and compared ignoring case, is `code` or
 * `state` (the OpenID Connect callback) or holds `token`, `secret`, `password` or `key`; and
 * when the value itself is a path the first rule redacts (`?next=/account/portal/<secret>`).
 * Hiding too much costs nothing.
 */

const hidden = '[redacted]'
const tokenName = 'access_token'
/** The parameter that marks a secret in a route's path. */
export const secretParam = 'secret'
const secretSegment = new RegExp(`^:${secretParam}(?![A-Za-z0-9_])`)
const secretQueryNames = new Set(['code', 'state'])
const secretNameParts = ['token', 'secret', 'password', 'key']

/** Every route path the app declared; the prefixes of those with a `:secret`; their rule. */
const routes = new Set<string>()
const secretRoutes = new Set<string>()
let secretPath: RegExp | undefined

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The part of a route's path before its `:secret`, as a pattern; undefined without one. */
function prefixOf(url: string): string | undefined {
  const segments = url.split('/')
  const at = segments.findIndex((s) => secretSegment.test(s))
  if (at === -1) return undefined
  return segments
    .slice(0, at)
    .filter((s) => s !== '')
    .map((s) => `${s.startsWith(':') ? '[^/]*' : escapeRegExp(s).replaceAll('\\*', '.*')}/+`)
    .join('')
}

/**
 * Takes a route of the app's table: one whose path has a `:secret` parameter has its paths
 * redacted from then on, by every logger of the process. Returns whether it has one.
 */
export function learnRoute(url: string): boolean {
  routes.add(url)
  const prefix = prefixOf(url)
  if (prefix === undefined) return false
  if (!secretRoutes.has(prefix)) {
    secretRoutes.add(prefix)
    secretPath = new RegExp(`(${[...secretRoutes].join('|')}).+$`, 'is')
  }
  return true
}

/** The route table the rule was built from: every path learnt, in the order declared. */
export const learntRoutes = (): string[] => [...routes]

/** Every route the app declares is learnt (an `onRoute` hook: add it before any route). */
export function redactSecretRoutes(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    learnRoute(route.url)
  })
}

/** Decodes each `%XX` as one character (never throws): enough to compare with ASCII names. */
const percentDecode = (text: string) =>
  text.includes('%')
    ? text.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    : text

function isSecretName(raw: string): boolean {
  if (raw === tokenName) return true
  const name = percentDecode(raw.replaceAll('+', ' ')).toLowerCase()
  return secretQueryNames.has(name) || secretNameParts.some((part) => name.includes(part))
}

/**
 * Decoded until nothing is left to decode (at most 3 times): a path given as a query value was
 * encoded once more (`next=%2Faccount%2F%2570ortal%2F...`), and is decoded again when followed.
 */
function fullyDecoded(text: string): string {
  let decoded = text
  for (let i = 0; i < 3 && decoded.includes('%'); i++) {
    const next = percentDecode(decoded)
    if (next === decoded) break
    decoded = next
  }
  return decoded
}

/** A query value that is (or holds) the path of a secret route. */
const holdsSecretPath = (text: string) =>
  secretPath?.test(fullyDecoded(text.replaceAll('+', ' '))) === true

function redactQuery(query: string): string {
  const parts = query.split('&')
  let changed = false
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string
    const eq = part.indexOf('=')
    if (eq === -1) continue
    if (isSecretName(part.slice(0, eq)) || holdsSecretPath(part.slice(eq + 1))) {
      parts[i] = `${part.slice(0, eq + 1)}${hidden}`
      changed = true
    }
  }
  return changed ? parts.join('&') : query
}

function redactPath(path: string): string {
  if (secretPath === undefined) return path
  const decoded = fullyDecoded(path)
  return secretPath.test(decoded) ? decoded.replace(secretPath, `$1${hidden}`) : path
}

/** A request target (path and query) with its secrets replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const question = url.indexOf('?')
  const hash = url.indexOf('#')
  const at = question === -1 || (hash !== -1 && hash < question) ? hash : question
  if (at === -1) return redactPath(url)
  return `${redactPath(url.slice(0, at))}${url[at]}${redactQuery(url.slice(at + 1))}`
}

/** Might hold a request target: only such text is worth scanning. */
export const mayHoldUrl = (text: string) =>
  text.includes('/') || text.includes('?') || text.includes('#')

/**
 * Free text (a log message, an error's message or stack) with every request target in it
 * redacted: a URL never holds whitespace, so each word that may be one is redacted as one.
 */
export const redactText = (text: string) =>
  mayHoldUrl(text)
    ? text
        .split(/(\s+)/)
        .map((word) => (mayHoldUrl(word) ? redactUrl(word) : word))
        .join('')
    : text
