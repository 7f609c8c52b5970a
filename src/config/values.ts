import { ConfigError } from './error.js'

export function integer(
  name: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
) {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${value}"`)
  }
  return n
}

/** `1` / `true` or `0` / `false`; unset is false. */
export function flag(name: string, value: string | undefined) {
  if (value === undefined || value === '0' || value === 'false') return false
  if (value === '1' || value === 'true') return true
  throw new ConfigError(`${name} must be 1 or 0, got "${value}"`)
}

/** The URL `value` is; `invalid` is the message when it is none. */
export function parseUrl(value: string, invalid: string): URL {
  try {
    return new URL(value)
  } catch {
    throw new ConfigError(invalid)
  }
}
