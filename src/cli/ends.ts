import { ApiError } from '../errors.js'
import { isoTime, parseTimestamp } from '../time.js'

const unitMs = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const

/**
 * An end as a person types it on the command line: a date (`2026-12-10`: its start, 00:00 UTC),
 * a duration from `now` (`90m`, `12h`, `30d`, `2w`) or an ISO 8601 timestamp. Undefined stays
 * undefined; the token service then says whether the instant is allowed.
 */
export function endOption(flag: string, text: string | undefined, now: number) {
  if (text === undefined) return undefined
  const duration = /^([0-9]{1,5})([mhdw])$/.exec(text)
  if (duration !== null) {
    const [, count, unit] = duration
    return isoTime(now + Number(count) * unitMs[unit as keyof typeof unitMs])
  }
  const at = parseTimestamp(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(text) ? `${text}T00:00:00Z` : text)
  if (at === undefined) {
    throw new ApiError(
      'invalidResources',
      `${flag} must be a date (2026-12-10: its start, UTC), a duration from now (90m, 12h, 30d, ` +
        `2w) or an ISO 8601 timestamp; not ${text}`,
    )
  }
  return isoTime(at)
}

/**
 * A refusal that names the API's fields (`expiresAt`) as the command line's flags
 * (`--expires-at`): the person reading it typed the flags.
 */
export async function inFlags<T>(
  flags: Record<string, string>,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work()
  } catch (err) {
    if (!(err instanceof ApiError) || err.details === undefined) throw err
    const fields = new RegExp(`\\b(${Object.keys(flags).join('|')})\\b`, 'g')
    const details = err.details.replace(fields, (field) => flags[field] ?? field)
    throw details === err.details ? err : new ApiError(err.kind, details)
  }
}
