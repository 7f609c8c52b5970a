import { fail } from '../errors.js'
import { isoTime, parseTimestamp } from '../time.js'
import { type AuditAction, auditActions } from './events.js'
import type { AuditFilter } from './log.js'

/** An audit listing as asked for by the admin API's query or `tessera audit`'s options. */
export interface AuditQuery {
  username?: string
  /** Comma-separated actions. */
  action?: string
  since?: string
  until?: string
  /** The id of the last event of the previous page. */
  start?: string
  limit: number
}

const known = new Set<string>(auditActions)
/** Event ids: 13 hex digits of time, then 12 characters of sequence and randomness. */
export const eventIdPattern = /^[0-9a-f]{13}[0-9a-z]{12}$/

/** `YYYY-MM-DD` (midnight UTC) or an RFC 3339 timestamp, as the stored ISO form. */
function time(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  const ms = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value)
  if (ms === undefined) {
    return fail('invalidResources', `${name} must be an ISO 8601 date or timestamp`)
  }
  return isoTime(ms)
}

/** Checks a query and turns it into the log's filter; a bad field is `resources are invalid`. */
export function auditFilter(q: AuditQuery): AuditFilter {
  const actions = q.action
    ?.split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '')
  for (const action of actions ?? []) {
    if (!known.has(action)) fail('invalidResources', `no such action: ${action.slice(0, 64)}`)
  }
  if (q.start !== undefined && !eventIdPattern.test(q.start)) fail('badStart')
  const filter: AuditFilter = { limit: q.limit }
  if (q.username !== undefined) filter.username = q.username
  // Each action once: the SQL's `in` list then has one of a few lengths (a bounded set of texts).
  if (actions !== undefined && actions.length > 0) {
    filter.actions = [...new Set(actions)] as AuditAction[]
  }
  const since = time('since', q.since)
  const until = time('until', q.until)
  if (since !== undefined) filter.since = since
  if (until !== undefined) filter.until = until
  if (q.start !== undefined) filter.before = q.start
  return filter
}
