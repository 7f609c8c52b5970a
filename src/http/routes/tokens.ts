import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import type { AccountRecord } from '../../db/repositories.js'
import { fail } from '../../errors.js'
import type { Principal } from '../../tokens/principal.js'
import { asksTemporary, creationRefusal } from '../../tokens/rules.js'
import { tokenActor } from '../actor.js'
import { tokenApi } from '../documented.js'
import { replayBody } from '../handover.js'
import {
  ChildBody,
  CreateBody,
  CreateResult,
  errorResponses,
  ListQuery,
  RollBody,
  TokenIdParams,
  TokenObject,
  UpdateBody,
  UsernameParams,
} from '../schemas.js'

const authErrors = errorResponses(401, 404, 422, 429)
/** Changes of a token: a retiring string cannot change its successors (403), nor others (404). */
const changeErrors = errorResponses(401, 403, 404, 422, 429)

/** The guard has run: an authenticated route always has both. */
const caller = (request: FastifyRequest) => ({
  principal: request.principal as Principal,
  account: request.account as AccountRecord,
})

export function tokenRoutes(app: FastifyInstance, ctx: AppContext) {
  listRoute(app, ctx)
  createRoute(app, ctx)
  updateRoute(app, ctx)
  rollRoute(app, ctx)
  deleteRoute(app, ctx)
  childRoute(app, ctx)
}

function listRoute(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/tokens/v2/:username',
    {
      config: { scope: 'tokens:read' },
      schema: {
        ...tokenApi('listTokens'),
        summary: 'List tokens',
        params: UsernameParams,
        querystring: ListQuery,
        response: { 200: Type.Array(TokenObject), ...authErrors },
      },
    },
    async (request, reply) => {
      const { account, principal } = caller(request)
      const q = request.query as Static<typeof ListQuery>
      const query = {
        usage: q.usage,
        isDefault: q.default === undefined ? undefined : q.default === 'true',
        limit: q.limit === undefined ? 100 : Number(q.limit),
        sortby: q.sortby ?? 'created',
        start: q.start,
        parent: q.parent,
      }
      const { body, next } = await ctx.tokens.list(account, query, principal)
      if (next !== undefined) {
        const link = new URLSearchParams({ limit: String(query.limit), start: next })
        if (q.sortby !== undefined) link.set('sortby', q.sortby)
        if (q.usage !== undefined) link.set('usage', q.usage)
        if (q.default !== undefined) link.set('default', q.default)
        if (q.parent !== undefined) link.set('parent', q.parent)
        const base = ctx.config.http.publicUrl ?? app.publicUrl
        reply.header('Link', `<${base}/tokens/v2/${account.username}?${link}>; rel="next"`)
      }
      // Already JSON, assembled from stored documents of the TokenObject shape.
      return reply.type('application/json; charset=utf-8').send(body)
    },
  )
}

function createRoute(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/tokens/v2/:username',
    {
      config: { scope: 'tokens:write' },
      schema: {
        ...tokenApi('createToken'),
        summary: 'Create a token, or a temporary token when the body has expires',
        params: UsernameParams,
        body: CreateBody,
        response: { 200: CreateResult, ...authErrors },
      },
      // The body the create fast path read, when it left the request to Fastify (http/ahead/create.ts).
      preParsing: replayBody,
      // The kind of token decides what it may create; checked before the body is validated.
      preValidation: (request, _reply, done) => {
        done(creationRefusal(caller(request).principal, asksTemporary(request.body)))
      },
    },
    async (request, reply) => {
      const { principal, account } = caller(request)
      const body = request.body as Static<typeof CreateBody>
      if (body.expires !== undefined) {
        const input = { ...body, expires: body.expires }
        return ctx.tokens.createTemporary(account, principal, input, tokenActor(request))
      }
      // Already JSON: the token's document with its string (the serializer's output, the same).
      const json = await ctx.tokens.createJson(account, principal, body, tokenActor(request))
      return reply.type('application/json; charset=utf-8').send(json)
    },
  )
}

function updateRoute(app: FastifyInstance, ctx: AppContext) {
  app.patch(
    '/tokens/v2/:username/:token_id',
    {
      config: { scope: 'tokens:write' },
      schema: {
        ...tokenApi('updateToken'),
        summary: 'Update a token',
        params: TokenIdParams,
        body: UpdateBody,
        response: { 200: TokenObject, ...changeErrors },
      },
    },
    async (request) => {
      const { principal, account } = caller(request)
      const { token_id } = request.params as Static<typeof TokenIdParams>
      return ctx.tokens.update(
        account,
        principal,
        token_id,
        request.body as Static<typeof UpdateBody>,
        tokenActor(request),
      )
    },
  )
}

function rollRoute(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/tokens/v2/:username/:token_id/roll',
    {
      config: { scope: 'tokens:write' },
      schema: {
        ...tokenApi('rollToken'),
        summary: 'Roll a token',
        description:
          'Requires the `tokens:write` scope (Tessera). A new token replaces this one: a new id ' +
          'and string, the same note, scopes, allowed URLs and default flag, created now. The ' +
          'old string keeps working until `expires` of the optional body `{"expires": ' +
          '"<ISO 8601>"}`: now when absent, at most 24 hours ahead. The caller must hold every ' +
          'scope of the token; a temporary token cannot roll one. A token rolled already (still ' +
          'working until its end) cannot be rolled again: 409. While it works, the old string ' +
          'may change no token but itself (403 for the tokens that replaced it, 404 for any ' +
          'other) and create no permanent token (404).',
        params: TokenIdParams,
        documentedBody: RollBody,
        response: { 200: TokenObject, ...changeErrors, ...errorResponses(409) },
      },
    },
    async (request) => {
      const { principal, account } = caller(request)
      const { token_id } = request.params as Static<typeof TokenIdParams>
      const body = request.body ?? {}
      if (typeof body !== 'object' || Array.isArray(body)) {
        fail('invalidResources', 'the body must be a JSON object')
      }
      const { expires, children, ...rest } = body as { expires?: unknown; children?: unknown }
      if (Object.keys(rest).length > 0) {
        fail('invalidResources', `unknown field: ${Object.keys(rest)[0]}`)
      }
      const input = { expires, children }
      return ctx.tokens.roll(account, principal, token_id, input, tokenActor(request))
    },
  )
}

function childRoute(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/tokens/v2/:username/:token_id/children',
    {
      config: { scope: 'tokens:write' },
      schema: {
        ...tokenApi('createChildToken'),
        summary: 'Create a child token',
        description:
          'Tessera (docs/machines.md). A pk or sk made under the token `token_id`, authorized as ' +
          'a create. Never wider than its parent or any ancestor: its scopes are theirs, its ' +
          "allowedUrls, allowedIps, expiresAt and named rate limits the parent's unless narrowed, " +
          "its credits taken off the parent's balance. Deleting, revoking or expiring the parent " +
          'ends it; a roll of the parent moves it to the new token. At most 4 levels deep.',
        params: TokenIdParams,
        body: ChildBody,
        response: { 200: CreateResult, ...changeErrors, ...errorResponses(409) },
      },
      preValidation: (request, _reply, done) => {
        done(creationRefusal(caller(request).principal, false))
      },
    },
    async (request) => {
      const { principal, account } = caller(request)
      const { token_id } = request.params as Static<typeof TokenIdParams>
      const body = request.body as Static<typeof ChildBody>
      return ctx.tokens.createChild(account, principal, token_id, body, tokenActor(request))
    },
  )
}

function deleteRoute(app: FastifyInstance, ctx: AppContext) {
  app.delete(
    '/tokens/v2/:username/:token_id',
    {
      config: { scope: 'tokens:write' },
      schema: {
        ...tokenApi('deleteToken'),
        summary: 'Delete a token',
        params: TokenIdParams,
        response: { 204: Type.Null(), ...changeErrors },
      },
    },
    async (request, reply) => {
      const { account } = caller(request)
      const { token_id } = request.params as Static<typeof TokenIdParams>
      await ctx.tokens.remove(account, token_id, tokenActor(request))
      return reply.code(204).send()
    },
  )
}
