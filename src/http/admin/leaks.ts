import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { maxLeakReports } from '../../tokens/leaks.js'
import { forAdmin, operator, tags } from './common.js'
import { adminErrors, operatorKey } from './schemas.js'

const resources = { errorMessage: 'resources are invalid' }

const LeaksBody = Type.Object(
  {
    tokens: Type.Array(Type.String({ maxLength: 4096, ...resources }), {
      maxItems: maxLeakReports,
      ...resources,
    }),
    url: Type.Optional(Type.String({ maxLength: 2048, ...resources })),
    source: Type.Optional(Type.String({ maxLength: 64, ...resources })),
  },
  resources,
)

const LeakAnswer = Type.Object({
  token_hash: Type.String({ description: 'SHA-256 (hex) of the reported string' }),
  label: Type.String({ description: '`true_positive` for a live Tessera token' }),
  action: Type.String({ description: '`revoked`, `flagged` or `none`' }),
})

/** An operator's own scanners report leaked tokens here. */
export function leakAdminRoutes(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/leaks',
    {
      config: forAdmin,
      schema: {
        summary: 'Report leaked tokens',
        description:
          'Token strings an operator found (at most 1,000), with where (`url`) and by what ' +
          '(`source`). A live sk is revoked; a live pk too unless restricted, then flagged ' +
          '(LEAKED_TOKENS). One answer per token, in order; each live one audited as token.leaked.',
        tags,
        security: operatorKey,
        body: LeaksBody,
        response: { 200: Type.Array(LeakAnswer), ...adminErrors(422) },
      },
    },
    async (request) => {
      const body = request.body as { tokens: string[]; url?: string; source?: string }
      const reports = body.tokens.map((token) => ({ token, url: body.url, source: body.source }))
      const outcomes = await ctx.leaks.report(reports, 'admin', operator(request))
      return outcomes.map((o) => ({
        token_hash: o.tokenHash,
        label: o.live ? 'true_positive' : 'false_positive',
        action: o.action,
      }))
    },
  )
}
