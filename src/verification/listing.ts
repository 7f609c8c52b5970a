import { fail } from '../errors.js'
import { isoTime, parseTimestamp } from '../time.js'
import { outcomes } from '../usage/outcomes.js'
import { sources } from './log.js'
import { reasonOf } from './reasons.js'
import type { StoredVerification, VerificationFilter, Verifications } from './verifications.js'

const dayMs = 86_400_000
const tokenId = /^c[a-z0-9]{24}$/

/**
 * A page of an account's verification log as the admin API's query and `tessera verifications`'
 * flags ask for it (docs/api.md): the API's names; times are ISO 8601 dates or timestamps.
 */
export interface VerificationQuery {
  from?: string | undefined
  to?: string | undefined
  token?: string | undefined
  /** Comma-separated outcomes. */
  outcome?: string | undefined
  /** Comma-separated sources. */
  source?: string | undefined
  /** The cursor of the page before (`cursorOf` its last row). */
  start?: string | undefined
  limit: number
}

/** One row as the API, the CLI and the dashboard show it: `reason` says it in words. */
export interface VerificationView {
  id: string
  at: string
  /** null: the string named no token (malformed, a temporary token, a former account's). */
  token: string | null
  source: string
  outcome: string
  limit?: string
  ip?: string
  origin?: string
  request_id?: string
  duration_us?: number
  reason: string
}

export interface VerificationPage {
  rows: VerificationView[]
  /** The range asked for, resolved: the next page keeps both, `to` above all (rows keep coming). */
  from: number
  to: number
  /** Each listed once, in the order given: the next page's query. */
  outcomes: string[] | undefined
  sources: string[] | undefined
  /** The cursor of the next page, when there is one. */
  next: string | undefined
  /** Rows of every account dropped unwritten in the range: the page may lack some. */
  dropped: number
}

/** `YYYY-MM-DD` (midnight UTC) or an RFC 3339 timestamp, in epoch ms; else 422. */
function time(name: string, value: string): number {
  const ms = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value)
  return ms ?? fail('invalidResources', `${name} must be an ISO 8601 date or timestamp`)
}

/** `to` is now unless given, `from` a day before it; at most the days kept, and one more. */
function rangeOf(q: VerificationQuery, now: number, retentionDays: number) {
  const to = q.to === undefined ? now : time('to', q.to)
  const from = q.from === undefined ? to - dayMs : time('from', q.from)
  if (from >= to) fail('invalidResources', 'from must be before to')
  const days = retentionDays + 1
  if (to - from > days * dayMs) {
    fail(
      'invalidResources',
      `from must be at most ${days} days before to: rows are kept ${retentionDays} days ` +
        '(VERIFICATION_LOG_RETENTION_DAYS)',
    )
  }
  return { from, to }
}

/** A comma-separated list of names of `known`, each once; undefined when none is given. */
function listOf(name: string, text: string | undefined, known: readonly string[]) {
  const given = text
    ?.split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  if (given === undefined || given.length === 0) return undefined
  for (const item of given) {
    if (!known.includes(item)) {
      fail(
        'invalidResources',
        `${name} must be a comma-separated list of ${known.join(', ')}; not ${item.slice(0, 64)}`,
      )
    }
  }
  return [...new Set(given)]
}

/** The cursor after a row: base64url of `<at>.<id>`, the order's two keys. */
export const cursorOf = (row: { at: number; id: string }) =>
  Buffer.from(`${row.at}.${row.id}`).toString('base64url')

function beforeOf(start: string | undefined): VerificationFilter['before'] {
  if (start === undefined) return undefined
  const text = /^[A-Za-z0-9_-]{1,64}$/.test(start) ? Buffer.from(start, 'base64url').toString() : ''
  const m = /^(\d{1,15})\.([A-Za-z0-9]{1,32})$/.exec(text)
  // Re-encoded, it must be the same text: one cursor per row, nothing else decodes to one.
  if (m === null || cursorOf({ at: Number(m[1]), id: m[2] as string }) !== start) {
    return fail('badStart')
  }
  return { at: Number(m[1]), id: m[2] as string }
}

export const viewOf = (r: StoredVerification): VerificationView => ({
  id: r.id,
  at: isoTime(r.at),
  token: r.tokenId === '' ? null : r.tokenId,
  source: r.source,
  outcome: r.outcome,
  ...(r.limit === null ? {} : { limit: r.limit }),
  ...(r.ip === null ? {} : { ip: r.ip }),
  ...(r.origin === null ? {} : { origin: r.origin }),
  ...(r.requestId === null ? {} : { request_id: r.requestId }),
  ...(r.durationUs === null ? {} : { duration_us: r.durationUs }),
  reason: reasonOf(r.outcome, r.limit),
})

/**
 * A page of an account's rows, newest first. Not before the account's creation: the rows of a
 * former account of the same name are not this one's (as its usage: docs/metering.md).
 */
export async function listVerifications(
  log: Pick<Verifications, 'list' | 'drops'>,
  o: {
    account: { username: string; created: string }
    query: VerificationQuery
    now: number
    retentionDays: number
  },
): Promise<VerificationPage> {
  const q = o.query
  const { from, to } = rangeOf(q, o.now, o.retentionDays)
  if (q.token !== undefined && !tokenId.test(q.token)) {
    fail('invalidResources', 'token must be an id: c and 24 characters of a-z and 0-9')
  }
  const filter: VerificationFilter = {
    account: o.account.username,
    from: Math.max(from, Date.parse(o.account.created)),
    to,
    limit: q.limit + 1,
  }
  const outcomeList = listOf('outcome', q.outcome, outcomes)
  const sourceList = listOf('source', q.source, sources)
  const before = beforeOf(q.start)
  if (q.token !== undefined) filter.token = q.token
  if (outcomeList !== undefined) filter.outcomes = outcomeList
  if (sourceList !== undefined) filter.sources = sourceList
  if (before !== undefined) {
    filter.before = before
    // The same rows, with a bound on `at` the index seeks to: a later page does not scan the
    // rows of the pages before it again.
    filter.to = Math.min(to, before.at + 1)
  }
  const rows = filter.from < filter.to ? await log.list(filter) : []
  const page = rows.slice(0, q.limit)
  const last = page.at(-1)
  const dropped = filter.from < to ? await log.drops(filter.from, to) : 0
  return {
    rows: page.map(viewOf),
    from,
    to,
    outcomes: outcomeList,
    sources: sourceList,
    next: rows.length > q.limit && last !== undefined ? cursorOf(last) : undefined,
    dropped,
  }
}
