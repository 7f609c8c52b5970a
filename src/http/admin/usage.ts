import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import type { Db } from '../../db/database.js'
import { fail } from '../../errors.js'
import { isoTime, parseTimestamp } from '../../time.js'
import type { UsageRow } from '../../usage/meter.js'
import { outcomes } from '../../usage/outcomes.js'
import { nextPage, pageSize, tags } from './common.js'
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
      schema: {
        summary: "An account's verifications by outcome over time",
        description:
          'Buckets of a minute, an hour or a day (UTC) that overlap [`from`, `to`) and hold any ' +
          'count, oldest first, `limit` of them (1-100, default 100); `totals` sums every bucket ' +
          'of the range, not just the page. `next` (and a `Link` header) when more follow. ' +
          'Counts are written about once a minute. 404 `No such user`; 422 `resources are ' +
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

/**
 * A batch's rows, each minute within [the day retention ago, 5 minutes ahead]; 422 when one is
 * not, or when one outcome of one (account, token, minute) adds up past `batchCountMax`.
 */
function reportRows(body: Report, now: number, retentionDays: number): UsageRow[] {
  const latest = now + 5 * 60_000
  const earliest = now - retentionDays * 86_400_000
  const sums = new Map<string, number[]>()
  return body.counts.map((c) => {
    const minute = time('minute', c.minute)
    if (minute > latest) fail('invalidResources', 'a minute is more than 5 minutes ahead')
    if (minute < earliest) fail('invalidResources', 'a minute is older than the days kept')
    const key = `${c.account} ${c.token} ${Math.floor(minute / 60_000)}`
    const sum = sums.get(key) ?? new Array<number>(outcomes.length).fill(0)
    sums.set(key, sum)
    for (const [i, o] of outcomes.entries()) {
      sum[i] = (sum[i] as number) + (c.outcomes[o] ?? 0)
      if ((sum[i] as number) > batchCountMax) {
        fail('invalidResources', `a count is more than ${batchCountMax} in one minute`)
      }
    }
    return { minute, account: c.account, tokenId: c.token, outcomes: c.outcomes }
  })
}

function reportsRoute(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/usage/reports',
    {
      // 10,000 count rows and 10,000 leases: past the API's 256 KiB.
      bodyLimit: 8 * 1024 * 1024,
      schema: {
        summary: "A verifier's counts",
        description:
          'Counts by outcome per minute, account and token (`""`: none), added to the usage; ' +
          'unspent credit leases given back, in the same transaction. Counted once per ' +
          '(`reporter`, `batch`): the same batch again answers `{"counted":false}` and changes ' +
          'nothing. At most 10,000 counts and 10,000 leases; 422 `resources are invalid` for a ' +
          'bad body, a minute more than 5 minutes ahead or older than the days kept, or more ' +
          'than 10^9 of one outcome for one (account, token, minute) in the batch.',
        tags,
        security: operatorKey,
        body: UsageReport,
        response: { 200: ReportAnswer, ...adminErrors(422) },
      },
    },
    async (request) => {
      const body = request.body as Report
      const rows = reportRows(body, ctx.tokens.now(), ctx.config.usage.retentionDays.day)
      const returned = body.returned ?? []
      // Unspent leases go back in the transaction of the counts: both once, or neither.
      const within =
        returned.length === 0
          ? undefined
          : async (trx: Db) => {
              await ctx.credits.returnLeases(trx, returned)
            }
      const counted = await ctx.usage.record(rows, body, within)
      return { counted }
    },
  )
}
