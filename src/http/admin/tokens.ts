import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { TokenObject } from '../schemas.js'
import { forAdmin, nextPage, operator, pageSize, tags } from './common.js'
import {
  AdminToken,
  adminErrors,
  operatorKey,
  PageQuery,
  TokenParams,
  TokenUsage,
  UsernameParams,
} from './schemas.js'

/** An account's tokens with their last use, and one token's hourly use (not in /tokens/v2). */
export function accountTokenRoutes(app: FastifyInstance, ctx: AppContext) {
  listAndUsage(app, ctx)
  roll(app, ctx)
}

/** An account's tokens and a token's usage. */
function listAndUsage(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/accounts/:username/tokens',
    {
      config: forAdmin,
      schema: {
        summary: "List an account's tokens with their last use",
        description:
          'Oldest first, as token objects (an `sk` without its string) with `lastUsed`: the ' +
          'minute of the last successful validation, written every `USAGE_FLUSH_SECONDS` (10 s), or null. ' +
          '`start` comes from the `Link: <...>; rel="next"` header of the previous page. 404 ' +
          '`No such user` when the account does not exist.',
        tags,
        security: operatorKey,
        params: UsernameParams,
        querystring: PageQuery,
        response: { 200: Type.Array(AdminToken), ...adminErrors(404, 422) },
      },
    },
    async (request, reply) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const q = request.query as Static<typeof PageQuery>
      const limit = pageSize(q.limit)
      const account = await ctx.accounts.get(username)
      const { tokens, next } = await ctx.tokens.browse(account, { start: q.start }, limit)
      const used = await ctx.usage.lastUsed(tokens.map((t) => t.id))
      if (next !== undefined) {
        nextPage(app, ctx, reply, `/accounts/${account.username}/tokens`, {
          limit: String(limit),
          start: next,
        })
      }
      return tokens.map((t) => ({ ...t, lastUsed: used.get(t.id) ?? null }))
    },
  )

  app.get(
    '/accounts/:username/tokens/:token_id/usage',
    {
      config: forAdmin,
      schema: {
        summary: "A token's last use and validations per hour",
        description:
          'Its valid validations per hour of the last 30 days, as written every `USAGE_FLUSH_SECONDS` ' +
          '(every outcome: `GET /accounts/{username}/usage?token=`). 404 `No such user` when ' +
          'the account does not exist, 404 `Not found` when it has no token with this id.',
        tags,
        security: operatorKey,
        params: TokenParams,
        response: { 200: TokenUsage, ...adminErrors(404) },
      },
    },
    async (request) => {
      const { username, token_id } = request.params as Static<typeof TokenParams>
      const account = await ctx.accounts.get(username)
      const token = await ctx.tokens.get(account, token_id)
      const { lastUsed, hours } = await ctx.usage.activity(token.id, account.username)
      return { lastUsed: lastUsed ?? null, hours }
    },
  )
}

/** Roll a token. */
function roll(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/accounts/:username/tokens/:token_id/roll',
    {
      config: forAdmin,
      schema: {
        summary: 'Roll a token',
        description:
          'As `POST /tokens/v2/{username}/{token_id}/roll`, for the account holder: a new token ' +
          'replaces this one; the old string works until `expires` (now when absent, at most 24 ' +
          'hours ahead). 404 `No such user`, or `Not found` for an unknown token.',
        tags,
        security: operatorKey,
        params: TokenParams,
        body: Type.Optional(Type.Object({ expires: Type.Optional(Type.String()) })),
        response: { 200: TokenObject, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { username, token_id } = request.params as Static<typeof TokenParams>
      const account = await ctx.accounts.get(username)
      const body = (request.body ?? {}) as { expires?: string }
      return ctx.tokens.roll(
        account,
        ctx.accounts.holder(account),
        token_id,
        { expires: body.expires },
        operator(request),
      )
    },
  )
}
