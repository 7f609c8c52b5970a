import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import type { Db } from '../../db/database.js'
import { fail } from '../../errors.js'
import { isoTime, parseTimestamp } from '../../time.js'
import type { UsageRow } from '../../usage/meter.js'
import { outcomes } from '../../usage/outcomes.js'
import { forAdmin, forVerifier, nextPage, pageSize, tags } from './common.js'
import { adminErrors, operatorKey, UsernameParams } from './schemas.js'
import {
  ReportAnswer,
  UsageByToken,
  UsageQuery,
  UsageReport,
  UsageSeries,
  UsageTokensQuery,
} from './usage-schemas.js'

/** `YYYY-MM-DD` (midnight UTC) or an RFC 3339 timestamp, in epoch ms; else 422. */
function time(name: string, value: string): number {
  const ms = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value)
  return ms ?? fail('invalidResources', `${name} must be an ISO 8601 date or timestamp`)
}

function range(q: { from: string; to: string }) {
  const from = time('from', q.from)
  const to = time('to', q.to)
  if (from >= to) fail('invalidResources', 'from must be before to')
  return { from, to }
}

/** Verifications by outcome: an account's series and tokens, and verifiers' reports. */
export function usageRoutes(app: FastifyInstance, ctx: AppContext): void {
  seriesRoute(app, ctx)
  tokensRoute(app, ctx)
  reportsRoute(app, ctx)
}

function seriesRoute(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/accounts/:username/usage',
    {
      config: forAdmin,
      schema: {
        summary: "An account's verifications by outcome over time",
        description:
          'Buckets of a minute, an hour or a day (UTC) that overlap [`from`, `to`) and hold any ' +
          'count, oldest first, `limit` of them (1-100, default 100); `totals` sums every bucket ' +
          'of the range, not just the page. `next` (and a `Link` header) when more follow. ' +
          'Counts are written every `USAGE_FLUSH_SECONDS` (10 s by default). 404 `No such user`; 422 `resources are ' +
          'invalid` for a bad time or resolution, `start is invalid` for a bad cursor.',
        tags,
        security: operatorKey,
        params: UsernameParams,
        querystring: UsageQuery,
        response: { 200: UsageSeries, ...adminErrors(404, 422) },
      },
    },
    async (request, reply) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const q = request.query as Static<typeof UsageQuery>
      const { from, to } = range(q)
      const after = q.start === undefined ? undefined : parseTimestamp(q.start)
      if (q.start !== undefined && after === undefined) fail('badStart')
      const account = await ctx.accounts.get(username)
      const resolution = q.resolution ?? 'hour'
      const limit = pageSize(q.limit)
      // Not the buckets of a former account of the same name (docs/metering.md).
      const since = Date.parse(account.created)
      const query = { from, to, since, resolution, token: q.token }
      const page = await ctx.usage.series(account.username, {
        ...query,
        limit,
        after: after === undefined ? undefined : isoTime(after),
      })
      const totals = await ctx.usage.totals(account.username, query)
      const answer = { resolution, from: isoTime(from), to: isoTime(to), ...page, totals }
      if (page.next === undefined) return answer
      const path = `/accounts/${account.username}/usage`
      const params: Record<string, string> = { from: answer.from, to: answer.to, resolution }
      if (q.token !== undefined) params.token = q.token
      Object.assign(params, { limit: String(limit), start: page.next })
      nextPage(app, ctx, reply, path, params)
      return { ...answer, next: `/admin/v1${path}?${new URLSearchParams(params)}` }
    },
  )
}

function tokensRoute(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/accounts/:username/usage/tokens',
    {
      config: forAdmin,
      schema: {
        summary: "An account's verifications by token",
        description:
          'Sums by outcome per token over the buckets that overlap [`from`, `to`), the most ' +
          'counted first; token `""` holds temporary tokens and strings refused as expired or ' +
          'revoked that name no token. Hours by default, days when `from` is past the hours kept.',
        tags,
        security: operatorKey,
        params: UsernameParams,
        querystring: UsageTokensQuery,
        response: { 200: UsageByToken, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const q = request.query as Static<typeof UsageTokensQuery>
      const { from, to } = range(q)
      const account = await ctx.accounts.get(username)
      const tokens = await ctx.usage.byToken(account.username, {
        from,
        to,
        since: Date.parse(account.created),
        resolution: q.resolution,
      })
      return { tokens }
    },
  )
}

type Report = Static<typeof UsageReport>

/** The most a batch adds to one outcome of one (account, token, minute): a bigint (2^63) takes
 * some 9 * 10^9 such batches, and a sum of them stays exact in a double for 9 * 10^6. */
export const batchCountMax = 1_000_000_000

/** A batch's rows, each minute within [the day retention ago, 5 minutes ahead]; else 422. */
function reportRows(body: Report, now: number, retentionDays: number): UsageRow[] {
  const latest = now + 5 * 60_000
  const earliest = now - retentionDays * 86_400_000
  return body.counts.map((c) => {
    const minute = time('minute', c.minute)
    if (minute > latest) fail('invalidResources', 'a minute is more than 5 minutes ahead')
    if (minute < earliest) fail('invalidResources', 'a minute is older than the days kept')
    return { minute, account: c.account, tokenId: c.token, outcomes: c.outcomes }
  })
}

/** 422 when one outcome of one (account, token, minute) adds up past `batchCountMax`. */
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
 */
async function attributed(ctx: AppContext, rows: UsageRow[]): Promise<UsageRow[]> {
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
      owns = await ctx.tokens.owns(account, tokenId)
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
    out.push({ ...row, account: '', tokenId: '', outcomes: nobodys })
  }
  return out
}

/**
 * A reporter as stored: the name in the namespace of the operator key that sent it
 * (`<key id>/<name>`), so that a batch counts once per key, reporter and batch, and one key's
 * batches can never answer another's `{"counted": false}`.
 */
export const reporterOf = (keyId: string | null, reporter: string) => `${keyId ?? ''}/${reporter}`

function reportsRoute(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/usage/reports',
    {
      config: forVerifier,
      // 10,000 count rows and 10,000 leases: past the API's 256 KiB.
      bodyLimit: 8 * 1024 * 1024,
      schema: {
        summary: "A verifier's counts",
        description:
          'Counts by outcome per minute, account and token (`""`: none), added to the usage; ' +
          'unspent credit leases given back, in the same transaction. Counted once per ' +
          '(`reporter`, `batch`): the same batch again answers `{"counted":false}` and changes ' +
          "nothing. A reporter name is the operator key's own: the same name sent with another " +
          'key is another reporter. At most 10,000 counts and 10,000 leases; 422 `resources are ' +
          'invalid` for a bad body, a minute more than 5 minutes ahead or older than the days ' +
          'kept, or more than 10^9 of one outcome for one (account, token, minute) in the batch.',
        tags,
        security: operatorKey,
        body: UsageReport,
        response: { 200: ReportAnswer, ...adminErrors(422) },
      },
    },
    async (request) => {
      const body = request.body as Report
      const reported = reportRows(body, ctx.tokens.now(), ctx.config.usage.retentionDays.day)
      // Refusals charged only where Tessera's rule says; bounded as they will be counted.
      const rows = await attributed(ctx, reported)
      checkSums(rows)
      const returned = body.returned ?? []
      // Unspent leases go back in the transaction of the counts: both once, or neither.
      const within =
        returned.length === 0
          ? undefined
          : async (trx: Db) => {
              await ctx.credits.returnLeases(trx, returned)
            }
      // A reporter name is the key's own: another key cannot take a batch id before it.
      const report = { reporter: reporterOf(request.adminKeyId, body.reporter), batch: body.batch }
      const counted = await ctx.usage.record(rows, report, within)
      return { counted }
    },
  )
}
