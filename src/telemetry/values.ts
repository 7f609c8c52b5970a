/** The environment as given: the process's, or a test's object. */
export type OtelEnv = Readonly<Record<string, string | undefined>>

/** A value of `env`, with an empty one read as unset (the spec's rule for every OTEL_* name). */
export const setting = (env: OtelEnv, name: string): string | undefined => {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

const fail = (name: string, value: string, expected: string): never => {
  throw new Error(`${name} must be ${expected}, not ${JSON.stringify(value)}`)
}

/** Whole milliseconds (or counts) of `name`, at least `min`; `fallback` when unset. */
export function integerOf(env: OtelEnv, name: string, fallback: number, min = 1): number {
  const value = setting(env, name)
  if (value === undefined) return fallback
  const n = /^\d{1,12}$/.test(value) ? Number(value) : Number.NaN
  return n >= min ? n : fail(name, value, `a whole number of at least ${min}`)
}

/** OTEL_SDK_DISABLED and the like: `true` or `false`, any case. */
export function booleanOf(env: OtelEnv, name: string): boolean {
  const value = setting(env, name)
  if (value === undefined) return false
  const lower = value.toLowerCase()
  if (lower === 'true' || lower === 'false') return lower === 'true'
  return fail(name, value, 'true or false')
}

/** One of `choices`, as written (the spec's names are lowercase); `fallback` when unset. */
export function choiceOf<T extends string>(
  env: OtelEnv,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const value = setting(env, name)
  if (value === undefined) return fallback
  if (choices.includes(value as T)) return value as T
  const [first, second] = choices
  return fail(
    name,
    value,
    choices.length === 2 ? `${first} or ${second}` : `one of ${choices.join(', ')}`,
  )
}

/** An http: or https: URL, as given (per-signal endpoints are used as they are). */
export function urlOf(name: string, value: string): URL {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {}
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    return fail(name, value, 'an http:// or https:// URL')
  }
  return url
}

// RFC 9110's token: a header name Node accepts.
const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/**
 * `k=v,k2=v2` (W3C Baggage without properties), values percent-decoded: the form of
 * OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES. Header names must be HTTP tokens;
 * no decoded value may hold a line break (it would be a second header).
 */
export function pairsOf(env: OtelEnv, name: string, header: boolean): Map<string, string> {
  const pairs = new Map<string, string>()
  const value = setting(env, name)
  if (value === undefined) return pairs
  for (const entry of value.split(',')) {
    if (entry.trim() === '') continue
    const at = entry.indexOf('=')
    const key = entry.slice(0, at).trim()
    let decoded: string | undefined
    try {
      decoded = decodeURIComponent(entry.slice(at + 1).trim())
    } catch {}
    const bad =
      at < 1 ||
      key === '' ||
      decoded === undefined ||
      /[\r\n\0]/.test(decoded) ||
      (header && !headerName.test(key))
    // Not the value: headers carry API keys.
    if (bad) throw new Error(`${name} must be a list of key=value, values percent-encoded`)
    pairs.set(header ? key.toLowerCase() : key, decoded as string)
  }
  return pairs
}
