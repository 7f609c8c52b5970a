import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { forAdmin, operator, tags } from './common.js'
import { RatelimitView } from './ratelimit-schemas.js'
import { adminErrors, operatorKey, UsernameParams } from './schemas.js'

const about =
  '`own` is what the account sets, `plan` what its plan sets in the catalog ' +
  '(`plans.<name>.ratelimits`), and `effective` what holds, in order: the service’s `requests` ' +
  '(RATE_LIMIT_PER_MINUTE per 60 s), replaced by the plan’s limit of the same name, replaced by ' +
  'the account’s own. A request passes only if every limit in force passes (docs/ratelimits.md).'

/** An account's named rate limits: read them, set them. */
export function accountRatelimitRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get(
    '/accounts/:username/ratelimits',
    {
      config: forAdmin,
      schema: {
        summary: "Read an account's rate limits",
        description: about,
        tags,
        security: operatorKey,
        params: UsernameParams,
        response: { 200: RatelimitView, ...adminErrors(404) },
      },
    },
    async (request) => {
      const { username } = request.params as { username: string }
      return ctx.accounts.ratelimits(await ctx.accounts.get(username), ctx.checkpoint.book)
    },
  )

  app.put(
    '/accounts/:username/ratelimits',
    {
      config: forAdmin,
      schema: {
        summary: "Set an account's rate limits",
        description:
          'Replaces what the account sets (an empty list: nothing of its own; its plan’s hold). ' +
          `${about} Audited and sent as \`ratelimits.changed\`; in force on every instance within ` +
          'a second. 422 `resources are invalid` for a list that is not one (`details` says which ' +
          'field): a name not of a-z, 0-9, `.`, `_` and `-`, a name given twice, more than 50 ' +
          'limits, a duration outside 1,000-86,400,000 ms.',
        tags,
        security: operatorKey,
        params: UsernameParams,
        // Checked by the service, whose sentences name the field: the schema documents it.
        body: Type.Unknown({
          description:
            '`{"limits": [{"name", "limit", "duration", "cost"?}, ...]}`: the account’s own ' +
            'limits (each as in `own` of the answer), replacing any it had',
          examples: [{ limits: [{ name: 'requests', limit: 600, duration: 60_000 }] }],
        }),
        response: { 200: RatelimitView, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { username } = request.params as { username: string }
      const { book } = ctx.checkpoint
      return ctx.accounts.setRatelimits(username, request.body, operator(request), book)
    },
  )
}
