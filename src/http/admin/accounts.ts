import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { usernamePattern } from '../../accounts/service.js'
import type { Actor } from '../../audit/events.js'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import { forAdmin, nextPage, operator, pageSize, tags } from './common.js'
import {
  AccountObject,
  adminErrors,
  ChangeAccountBody,
  CreateAccountBody,
  CreatedAccount,
  operatorKey,
  PageQuery,
  SetupLink,
  UsernameParams,
} from './schemas.js'

const missing = 'No such user (404) when the account does not exist.'

/** A new one-time setup link for the account's holder; earlier ones stop working. */
async function setupUrl(app: FastifyInstance, ctx: AppContext, username: string, actor: Actor) {
  const origin = ctx.config.http.publicUrl ?? app.publicUrl
  return `${origin}/account/setup/${await ctx.holders.invite(username, actor)}`
}

/** Accounts: create, read, list, change, disable and enable, delete, and setup links. */
export function accountRoutes(app: FastifyInstance, ctx: AppContext) {
  createAndList(app, ctx)
  readAndChange(app, ctx)
  disableAndDelete(app, ctx)
  setupLinks(app, ctx)
}

/** Create an account; list them. */
function createAndList(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/accounts',
    {
      config: forAdmin,
      schema: {
        summary: 'Create an account',
        description:
          'Creates the account with its default public token, and a setup link for its holder. ' +
          '409 `account already exists` when the username is taken; 422 `resources are invalid` ' +
          'for a bad username, an unknown plan or feature (`details` says which).',
        tags,
        security: operatorKey,
        body: CreateAccountBody,
        response: { 201: CreatedAccount, ...adminErrors(409, 422) },
      },
    },
    async (request, reply) => {
      const body = request.body as Static<typeof CreateAccountBody>
      const actor = operator(request)
      const account = await ctx.accounts.create(
        body.username,
        body.plan,
        body.features ?? [],
        actor,
      )
      const url = await setupUrl(app, ctx, account.username, actor)
      return reply.code(201).send({ ...account, setupUrl: url })
    },
  )

  app.get(
    '/accounts',
    {
      config: forAdmin,
      schema: {
        summary: 'List accounts',
        description:
          'Accounts in username order. `start` is the last username of the previous page; a ' +
          '`Link: <...>; rel="next"` header leads to the next page when there is one.',
        tags,
        security: operatorKey,
        querystring: PageQuery,
        response: { 200: Type.Array(AccountObject), ...adminErrors(422) },
      },
    },
    async (request, reply) => {
      const q = request.query as Static<typeof PageQuery>
      const limit = pageSize(q.limit)
      if (q.start !== undefined && !usernamePattern.test(q.start)) throw new ApiError('badStart')
      const rows = await ctx.accounts.list({ after: q.start, limit: limit + 1 })
      const page = rows.slice(0, limit)
      const last = page.at(-1)
      if (rows.length > limit && last !== undefined) {
        nextPage(app, ctx, reply, '/accounts', { limit: String(limit), start: last.username })
      }
      return page
    },
  )
}

/** Read an account; change its plan and features. */
function readAndChange(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/accounts/:username',
    {
      config: forAdmin,
      schema: {
        summary: 'Get an account',
        description: missing,
        tags,
        security: operatorKey,
        params: UsernameParams,
        response: { 200: AccountObject, ...adminErrors(404) },
      },
    },
    async (request) => ctx.accounts.get((request.params as Static<typeof UsernameParams>).username),
  )

  app.patch(
    '/accounts/:username',
    {
      config: forAdmin,
      schema: {
        summary: 'Change the plan and features of an account',
        description:
          'Scopes the account no longer has are removed from its tokens; the default token holds ' +
          'every public scope of the new plan. `features` replaces the list. 422 `resources are ' +
          `invalid\` for an unknown plan or feature, or a body naming neither. ${missing}`,
        tags,
        security: operatorKey,
        params: UsernameParams,
        body: ChangeAccountBody,
        response: { 200: AccountObject, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const { plan, features } = request.body as Static<typeof ChangeAccountBody>
      if (plan === undefined && features === undefined) {
        throw new ApiError('invalidResources', 'a change names plan, features or both')
      }
      return ctx.accounts.change(username, { plan, features }, operator(request))
    },
  )
}

/** Disable, enable and delete an account. */
function disableAndDelete(app: FastifyInstance, ctx: AppContext) {
  for (const [action, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    app.post(
      `/accounts/:username/${action}`,
      {
        config: forAdmin,
        schema: {
          summary: disabled ? 'Disable an account' : 'Enable an account',
          description: disabled
            ? 'Its tokens are `Unauthorized` everywhere and retrieve says `TokenRevoked`, until ' +
              `it is enabled again; its dashboard sessions end. ${missing}`
            : `Its tokens work again. ${missing}`,
          tags,
          security: operatorKey,
          params: UsernameParams,
          response: { 200: AccountObject, ...adminErrors(404) },
        },
      },
      async (request) => {
        const { username } = request.params as Static<typeof UsernameParams>
        return ctx.accounts.setDisabled(username, disabled, operator(request))
      },
    )
  }

  app.delete(
    '/accounts/:username',
    {
      config: forAdmin,
      schema: {
        summary: 'Delete an account',
        description:
          'Every token of the account is revoked, fleet-wide; its audit events remain. The ' +
          `username may be used again: the old tokens stay revoked. ${missing}`,
        tags,
        security: operatorKey,
        params: UsernameParams,
        response: { 204: Type.Null(), ...adminErrors(404) },
      },
    },
    async (request, reply) => {
      const { username } = request.params as Static<typeof UsernameParams>
      await ctx.accounts.remove(username, operator(request))
      return reply.code(204).send()
    },
  )
}

/** A new setup link for the holder. */
function setupLinks(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/accounts/:username/setup-url',
    {
      config: forAdmin,
      schema: {
        summary: 'Make a new setup link',
        description:
          'A one-time link for the account holder to set a password (also a reset); earlier ' +
          `links stop working. ${missing}`,
        tags,
        security: operatorKey,
        params: UsernameParams,
        response: { 200: SetupLink, ...adminErrors(404) },
      },
    },
    async (request) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const account = await ctx.accounts.get(username)
      return {
        username: account.username,
        setupUrl: await setupUrl(app, ctx, account.username, operator(request)),
      }
    },
  )
}
