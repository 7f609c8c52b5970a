import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { NamespaceLimits } from '../../verification/namespaces.js'
import { forAdmin, forVerifier, nextPage, operator, pageSize, tags } from './common.js'
import {
  LimitAnswer,
  LimitBody,
  NamespaceParams,
  OverrideBody,
  OverrideObject,
  OverrideParams,
} from './namespace-schemas.js'
import { adminErrors, operatorKey, PageQuery } from './schemas.js'

/** One namespace service per context: its overrides cache is the context's. */
const services = new WeakMap<AppContext, NamespaceLimits>()
const serviceOf = (ctx: AppContext) => {
  let service = services.get(ctx)
  if (service === undefined) {
    service = new NamespaceLimits({ db: ctx.db, checkpoint: ctx.checkpoint, now: ctx.tokens.now })
    services.set(ctx, service)
  }
  return service
}

const overrides =
  'An override replaces, for the identifiers it matches, the limit and duration requests ask: ' +
  'an identifier’s own override first, else the longest `*` prefix that matches it. At most ' +
  '1,000 overrides in a namespace. A change is in force on every instance within a second.'

/**
 * The namespace API (Unkey's ratelimit API): limits on the platform's own identifiers (an end
 * user, an address, a tenant), and overrides of them.
 */
export function namespaceRatelimitRoutes(app: FastifyInstance, ctx: AppContext): void {
  const limits = serviceOf(ctx)
  app.post(
    '/ratelimits/:namespace',
    {
      config: forVerifier,
      schema: {
        summary: 'Count a request of an identifier against its limit',
        description:
          'Counts `cost` against the identifier in the namespace, in fixed windows aligned to the ' +
          'epoch, exactly across every instance (docs/ratelimits.md); a request refused counts ' +
          `nothing. ${overrides} A \`verifier\` key may call it.`,
        tags,
        security: operatorKey,
        params: NamespaceParams,
        body: LimitBody,
        response: { 200: LimitAnswer, ...adminErrors(422) },
      },
    },
    // Not async: a value when the overrides are cached and the limiter answers at once (Fastify
    // sends a value returned as it sends a promise's).
    (request: FastifyRequest) => {
      const { namespace } = request.params as { namespace: string }
      return limits.limit(namespace, request.body)
    },
  )

  app.get(
    '/ratelimits/:namespace/overrides',
    {
      config: forAdmin,
      schema: {
        summary: 'List the overrides of a namespace',
        description:
          `${overrides} In identifier order (by bytes); \`start\` is the last identifier of the ` +
          'previous page; a `Link: <...>; rel="next"` header leads to the next page when there is one.',
        tags,
        security: operatorKey,
        params: NamespaceParams,
        querystring: PageQuery,
        response: { 200: Type.Array(OverrideObject), ...adminErrors(422) },
      },
    },
    async (request, reply) => {
      const { namespace } = request.params as { namespace: string }
      const q = request.query as { limit?: string; start?: string }
      const limit = pageSize(q.limit)
      const rows = await limits.overrides(namespace, q.start, limit + 1)
      const page = rows.slice(0, limit)
      const last = page.at(-1)
      if (rows.length > limit && last !== undefined) {
        const path = `/ratelimits/${namespace}/overrides`
        nextPage(app, ctx, reply, path, { limit: String(limit), start: last.identifier })
      }
      return page
    },
  )

  overrideRoutes(app, limits)
}

/** One override: set, read, delete. */
function overrideRoutes(app: FastifyInstance, limits: NamespaceLimits) {
  const path = '/ratelimits/:namespace/overrides/:identifier'
  const params = (request: FastifyRequest) =>
    request.params as { namespace: string; identifier: string }
  app.put(
    path,
    {
      config: forAdmin,
      schema: {
        summary: 'Set an override',
        description:
          `${overrides} Audited and sent as \`ratelimit_override.set\`. 422 \`resources are ` +
          'invalid` for a bad namespace, identifier or body (`details` says which), or a new ' +
          'override in a namespace that holds 1,000.',
        tags,
        security: operatorKey,
        params: OverrideParams,
        body: OverrideBody,
        response: { 200: OverrideObject, ...adminErrors(422) },
      },
    },
    async (request) => {
      const { namespace, identifier } = params(request)
      return limits.setOverride(namespace, identifier, request.body, operator(request))
    },
  )

  app.get(
    path,
    {
      config: forAdmin,
      schema: {
        summary: 'Read an override',
        description: `${overrides} 404 \`Not found\` when there is none.`,
        tags,
        security: operatorKey,
        params: OverrideParams,
        response: { 200: OverrideObject, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { namespace, identifier } = params(request)
      return limits.override(namespace, identifier)
    },
  )

  app.delete(
    path,
    {
      config: forAdmin,
      schema: {
        summary: 'Delete an override',
        description:
          'The requests’ own limits apply again to the identifiers it matched (or a shorter ' +
          'prefix’s override). Audited and sent as `ratelimit_override.deleted`. 404 `Not found` ' +
          'when there is none.',
        tags,
        security: operatorKey,
        params: OverrideParams,
        response: { 204: Type.Null(), ...adminErrors(404, 422) },
      },
    },
    async (request, reply) => {
      const { namespace, identifier } = params(request)
      await limits.deleteOverride(namespace, identifier, operator(request))
      return reply.code(204).send()
    },
  )
}
