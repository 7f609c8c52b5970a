import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { isoTime } from '../../time.js'
import { listVerifications } from '../../verification/listing.js'
import { forAdmin, nextPage, pageSize, tags } from './common.js'
import { adminErrors, operatorKey, UsernameParams } from './schemas.js'
import { VerificationObject, VerificationsQuery } from './verification-schemas.js'

/** Rows of every account dropped unwritten in the range: this page may lack some. */
export const droppedHeader = 'Verification-Log-Dropped'

const description =
  "One row per verification of the account's tokens (docs/api.md), newest first, in [`from`, " +
  '`to`): `to` is now and `from` a day before it unless given, at most ' +
  '`VERIFICATION_LOG_RETENTION_DAYS` + 1 days apart; none from before the account was created. ' +
  '`token`, `outcome` and `source` filter (lists comma-separated). When more rows follow, a ' +
  '`Link: <...>; rel="next"` header gives the next page with the same filters and the same ' +
  '`from` and `to`, so that rows written meanwhile do not shift the pages. When the buffer ' +
  'dropped rows (of any account) in the range, `Verification-Log-Dropped: <n>` says how many: ' +
  'the list may lack some. 404 `No such user`; 422 `resources are invalid` for a bad time, ' +
  'range, token, outcome or source, `start is invalid` for a bad cursor.'

/** The verification log of an account (issue 47: "Read it"). */
export function verificationRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get(
    '/accounts/:username/verifications',
    {
      config: forAdmin,
      schema: {
        summary: "An account's verifications, one row each",
        description,
        tags,
        security: operatorKey,
        params: UsernameParams,
        querystring: VerificationsQuery,
        response: { 200: Type.Array(VerificationObject), ...adminErrors(404, 422) },
      },
    },
    async (request, reply) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const q = request.query as Static<typeof VerificationsQuery>
      const account = await ctx.accounts.get(username)
      const limit = pageSize(q.limit)
      const page = await listVerifications(ctx.verifications, {
        account,
        query: { ...q, limit },
        now: ctx.tokens.now(),
        retentionDays: ctx.config.usage.log.retentionDays,
      })
      if (page.dropped > 0) reply.header(droppedHeader, String(page.dropped))
      if (page.next !== undefined) {
        nextPage(app, ctx, reply, `/accounts/${account.username}/verifications`, {
          from: isoTime(page.from),
          to: isoTime(page.to),
          token: q.token,
          outcome: page.outcomes?.join(','),
          source: page.sources?.join(','),
          limit: String(limit),
          start: page.next,
        })
      }
      return page.rows
    },
  )
}
