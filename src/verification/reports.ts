import type { Db } from '../db/database.js'
import { fail } from '../errors.js'
import { parseTimestamp } from '../time.js'
import type { Returned } from '../usage/credits-leases.js'
import type { LimitedBy, Meter, UsageRow } from '../usage/meter.js'
import { type Outcome, type OutcomeCounts, outcomeIndex, outcomes } from '../usage/outcomes.js'
import type { VerificationRow } from './log.js'
import type { VerificationLog } from './log-writer.js'

/** A verifier's batch as `POST /admin/v1/usage/reports` takes it (its schema checked). */
export interface VerifierReport {
  reporter: string
  batch: string
  counts: readonly {
    minute: string
    account: string
    token: string
    outcomes: OutcomeCounts
    /** The split of `outcomes.rate_limited` by limit name: at most it, in sum. */
    rate_limited_by?: LimitedBy
  }[]
  returned?: readonly Returned[]
  /** Refused decisions, one row each for the verification log (bounded by the schema). */
  refused?: readonly RefusedRow[]
}

/** A verifier's refused decision as a report carries it. */
export interface RefusedRow {
  at: string
  account: string
  token: string
  outcome: Exclude<Outcome, 'valid'>
  limit?: string
  ip?: string
  origin?: string
  request_id?: string
  duration_us?: number
}

/** What recording a batch reads and writes: the application's context has it all. */
export interface ReportDeps {
  usage: Pick<Meter, 'record'>
  credits: { returnLeases(trx: Db, returned: readonly Returned[]): Promise<unknown> }
  tokens: { now(): number; owns(account: string, id: string): Promise<boolean> }
  verifications?: { log: VerificationLog }
  config: { usage: { retentionDays: { day: number } } }
}

/** The most a batch adds to one outcome of one (account, token, minute): a bigint (2^63) takes
 * some 9 * 10^9 such batches, and a sum of them stays exact in a double for 9 * 10^6. */
export const batchCountMax = 1_000_000_000

/**
 * A reporter as stored: the name in the namespace of the operator key that sent it
 * (`<key id>/<name>`), so that a batch counts once per key, reporter and batch, and one key's
 * batches can never answer another's `{"counted": false}`.
 */
export const reporterOf = (keyId: string | null, reporter: string) => `${keyId ?? ''}/${reporter}`

/**
 * A verifier's batch, counted once per (reporter, batch): its counts (refusals charged where
 * Tessera's rule says, `attributed`) added to the usage, and its unspent credit leases given
 * back, in one transaction: both once, or neither. False when the batch was counted before
 * (nothing changes). 422 for a minute out of range, a split past its rate_limited, or a count
 * past `batchCountMax`; nothing is written then.
 */
export async function recordReport(
  deps: ReportDeps,
  body: VerifierReport,
  keyId: string | null,
): Promise<boolean> {
  const reported = reportRows(body, deps.tokens.now(), deps.config.usage.retentionDays.day)
  // Refusals charged only where Tessera's rule says; bounded as they will be counted.
  const rows = await attributed(deps, reported)
  checkSums(rows)
  const returned = body.returned ?? []
  const within =
    returned.length === 0
      ? undefined
      : async (trx: Db) => {
          await deps.credits.returnLeases(trx, returned)
        }
  // A reporter name is the key's own: another key cannot take a batch id before it.
  const report = { reporter: reporterOf(keyId, body.reporter), batch: body.batch }
  const refused = await refusedRows(deps, body.refused ?? [])
  const counted = await deps.usage.record(rows, report, within)
  // Once with its batch: a batch sent again (its answer lost) adds no rows.
  const log = deps.verifications?.log
  if (counted && log !== undefined) for (const row of refused) log.add(row)
  return counted
}

/**
 * A report's refused rows for the log (when it keeps them), checked as its counts are: each
 * `at` within [the day retention ago, 5 minutes ahead], else 422; a revoked or expired row
 * names its account only when the token is that account's (see `attributed`).
 */
async function refusedRows(deps: ReportDeps, rows: readonly RefusedRow[]) {
  const log = deps.verifications?.log
  const now = deps.tokens.now()
  const earliest = now - deps.config.usage.retentionDays.day * 86_400_000
  const out: VerificationRow[] = []
  const owned = new Map<string, boolean>()
  for (const r of rows) {
    const at = minuteOf(r.at)
    if (at > now + 5 * 60_000) fail('invalidResources', 'a refusal is more than 5 minutes ahead')
    if (at < earliest) fail('invalidResources', 'a refusal is older than the days kept')
    if (log === undefined || !log.keeps(outcomeIndex[r.outcome])) continue
    let { account, token } = r
    if (account !== '' && token !== '' && (r.outcome === 'revoked' || r.outcome === 'expired')) {
      const key = `${account} ${token}`
      const owns = owned.get(key) ?? (await deps.tokens.owns(account, token))
      owned.set(key, owns)
      if (!owns) [account, token] = ['', '']
    }
    if (r.outcome === 'malformed' || r.outcome === 'invalid') [account, token] = ['', '']
    out.push({
      at,
      account,
      tokenId: token,
      source: 'verifier',
      outcome: r.outcome,
      limit: r.outcome === 'rate_limited' ? (r.limit ?? null) : null,
      ip: r.ip ?? null,
      origin: r.origin ?? null,
      requestId: r.request_id ?? null,
      durationUs: r.duration_us ?? null,
    })
  }
  return out
}

/** `YYYY-MM-DD` (midnight UTC) or an RFC 3339 timestamp, in epoch ms; else 422. */
function minuteOf(value: string): number {
  const ms = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value)
  return ms ?? fail('invalidResources', 'minute must be an ISO 8601 date or timestamp')
}

/** A split that adds up to at most `limited`, names at 0 left out; else 422. */
function splitOf(split: LimitedBy | undefined, limited: number): LimitedBy | undefined {
  if (split === undefined) return undefined
  const kept = Object.entries(split).filter(([, n]) => n !== 0)
  const sum = kept.reduce((a, [, n]) => a + n, 0)
  if (sum > limited) {
    fail('invalidResources', 'rate_limited_by adds up to more than its rate_limited')
  }
  return kept.length === 0 ? undefined : Object.fromEntries(kept)
}

/** A batch's rows, each minute within [the day retention ago, 5 minutes ahead]; else 422. */
function reportRows(body: VerifierReport, now: number, retentionDays: number): UsageRow[] {
  const latest = now + 5 * 60_000
  const earliest = now - retentionDays * 86_400_000
  return body.counts.map((c) => {
    const minute = minuteOf(c.minute)
    if (minute > latest) fail('invalidResources', 'a minute is more than 5 minutes ahead')
    if (minute < earliest) fail('invalidResources', 'a minute is older than the days kept')
    const row: UsageRow = { minute, account: c.account, tokenId: c.token, outcomes: c.outcomes }
    const limited = splitOf(c.rate_limited_by, c.outcomes.rate_limited ?? 0)
    if (limited !== undefined) row.limited = limited
    return row
  })
}

/**
 * 422 when one outcome of one (account, token, minute) adds up past `batchCountMax` (a name's
 * split adds up to at most its rate_limited: bounded with it).
 */
function checkSums(rows: UsageRow[]): void {
  const sums = new Map<string, number[]>()
  for (const row of rows) {
    const key = `${row.account} ${row.tokenId} ${Math.floor(row.minute / 60_000)}`
    const sum = sums.get(key) ?? new Array<number>(outcomes.length).fill(0)
    sums.set(key, sum)
    for (const [i, o] of outcomes.entries()) {
      sum[i] = (sum[i] as number) + (row.outcomes[o] ?? 0)
      if ((sum[i] as number) > batchCountMax) {
        fail('invalidResources', `a count is more than ${batchCountMax} in one minute`)
      }
    }
  }
}

/** The outcomes whose count a string's payload attributes: its signature verified. */
const attributedOutcomes = ['revoked', 'expired'] as const

/**
 * Whom a reported refusal is counted against is Tessera's to decide, not the verifier's (which
 * names the account and id in the string, and one of before this rule does so always): a row's
 * revoked and expired counts for a pk/sk id go to nobody ('', '', as Tessera's own unowned
 * refusals, usage/attribution.ts) unless the validator's rule says the id is the account's
 * that has the name now (not a former account's, nor another's, nor no token's). One look per
 * distinct (account, id), from the validator's caches when it can. A row of no id (a tk) is
 * the verifier's: Tessera's introspection answer says `unowned` for one not the account's.
 * A row's rate_limited (and its split by name) stays with its account: only a valid token is
 * limited.
 */
async function attributed(deps: ReportDeps, rows: UsageRow[]): Promise<UsageRow[]> {
  const owned = new Map<string, boolean>()
  const out: UsageRow[] = []
  for (const row of rows) {
    const { account, tokenId, outcomes: counts } = row
    if (account === '' || tokenId === '' || !attributedOutcomes.some((o) => counts[o])) {
      out.push(row)
      continue
    }
    const key = `${account} ${tokenId}`
    let owns = owned.get(key)
    if (owns === undefined) {
      owns = await deps.tokens.owns(account, tokenId)
      owned.set(key, owns)
    }
    if (owns) {
      out.push(row)
      continue
    }
    const theirs = { ...counts }
    const nobodys: UsageRow['outcomes'] = {}
    for (const o of attributedOutcomes) {
      if (counts[o] !== undefined) nobodys[o] = counts[o]
      delete theirs[o]
    }
    if (Object.values(theirs).some((n) => n !== 0)) out.push({ ...row, outcomes: theirs })
    out.push({ minute: row.minute, account: '', tokenId: '', outcomes: nobodys })
  }
  return out
}
