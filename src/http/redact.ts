/**
 * Secrets kept out of every log line: a token given as `access_token`, and the secret of a
 * dashboard setup link. Redaction follows the router and the query parser rather than the
 * raw text, so that no spelling the server accepts slips through: the query begins at the
 * first `?` or `#`, and names are percent-decoded (`access%5Ftoken`, `%61ccess_token`) with
 * `+` as a space. Names are also compared ignoring case: hiding too much costs nothing.
 */

const hidden = '[redacted]'
const tokenName = 'access_token'
/** A setup link's secret is everything after `/account/setup/`, however many slashes. */
const setupLink = /(account\/+setup\/+).+$/is

/** Decodes each `%XX` as one character (never throws): enough to compare with ASCII names. */
const percentDecode = (text: string) =>
  text.includes('%')
    ? text.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    : text

const isTokenName = (raw: string) =>
  raw === tokenName ||
  (raw.length >= tokenName.length &&
    percentDecode(raw.replaceAll('+', ' ')).toLowerCase() === tokenName)

function redactQuery(query: string): string {
  const parts = query.split('&')
  let changed = false
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string
    const eq = part.indexOf('=')
    if (eq !== -1 && isTokenName(part.slice(0, eq))) {
      parts[i] = `${part.slice(0, eq + 1)}${hidden}`
      changed = true
    }
  }
  return changed ? parts.join('&') : query
}

function redactPath(path: string): string {
  if (setupLink.test(path)) return path.replace(setupLink, `$1${hidden}`)
  // The router decodes the path before matching it: /account/%73etup/<secret> is a setup link.
  const decoded = percentDecode(path)
  return decoded !== path && setupLink.test(decoded)
    ? decoded.replace(setupLink, `$1${hidden}`)
    : path
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
