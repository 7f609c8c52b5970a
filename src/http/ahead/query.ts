const decode = (text: string) => {
  if (!text.includes('%') && !text.includes('+')) return text
  const spaced = text.replaceAll('+', ' ')
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced // a malformed escape is kept as given
  }
}

/**
 * The router's query parser, and the fast paths': a repeated parameter takes its first value.
 * A plain object (a null-prototype one is a slow dictionary in V8), so `__proto__` is never
 * taken as a name; no parameter has that name.
 */
export function parseQuery(query: string): Record<string, string> {
  // The query of nearly every request: a token alone.
  if (query.startsWith('access_token=') && query.indexOf('&', 13) === -1) {
    return { access_token: decode(query.slice(13)) }
  }
  const out: Record<string, string> = {}
  let start = 0
  while (start <= query.length) {
    let end = query.indexOf('&', start)
    if (end === -1) end = query.length
    if (end > start) {
      const eq = query.indexOf('=', start)
      const named = eq !== -1 && eq < end
      const key = decode(query.slice(start, named ? eq : end))
      if (key !== '__proto__' && !Object.hasOwn(out, key)) {
        out[key] = named ? decode(query.slice(eq + 1, end)) : ''
      }
    }
    start = end + 1
  }
  return out
}
