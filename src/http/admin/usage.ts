import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { fail } from '../../errors.js'
import { isoTime, parseTimestamp } from '../../time.js'
import { recordReport } from '../../verification/reports.js'
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
          'of the range, not just the page. A bucket with `rate_limited` counts by a named limit ' +
          'has `rate_limited_by` (`{"<limit name>": n}`), as `rate_limited_by` beside `totals` ' +
          "has the range's. `next` (and a `Link` header) when more follow. " +
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
      const sums = await ctx.usage.totalsSplit(account.username, query)
      const answer = { resolution, from: isoTime(from), to: isoTime(to), ...page, ...sums }
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
          "revoked that name no token; `rate_limited_by` splits a token's `rate_limited` by " +
          'limit name where any. Hours by default, days when `from` is past the hours kept.',
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
          'Counts by outcome per minute, account and token (`""`: none), added to the usage, ' +
          'and optionally `rate_limited_by` (`{"<limit name>": n}`, adding up to at most the ' +
          "row's `rate_limited`); " +
          'unspent credit leases given back, in the same transaction. Counted once per ' +
          '(`reporter`, `batch`): the same batch again answers `{"counted":false}` and changes ' +
          "nothing. A reporter name is the operator key's own: the same name sent with another " +
          'key is another reporter. At most 10,000 counts and 10,000 leases; 422 `resources are ' +
          'invalid` for a bad body, a minute more than 5 minutes ahead or older than the days ' +
          'kept, a `rate_limited_by` past its `rate_limited`, or more than 10^9 of one outcome ' +
          'for one (account, token, minute) in the batch.',
        tags,
        security: operatorKey,
        body: UsageReport,
        response: { 200: ReportAnswer, ...adminErrors(422) },
      },
    },
    async (request) => {
      const body = request.body as Static<typeof UsageReport>
      return { counted: await recordReport(ctx, body, request.adminKeyId) }
    },
  )
}
