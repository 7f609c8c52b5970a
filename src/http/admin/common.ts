import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { OperatorScope } from '../../admin/keys.js'
import type { Actor } from '../../audit/events.js'
import type { AppContext } from '../../context.js'
import { actorOf } from '../actor.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The id of the operator key that authorised an admin request. */
    adminKeyId: string | null
    /** That key's scope (what GET /admin/v1/events sends depends on it). */
    adminKeyScope: OperatorScope | null
  }
  interface FastifyContextConfig {
    /**
     * The operator scope an admin route needs (src/admin/keys.ts). Every admin route declares
     * one: a route without it stops start-up (`operatorScopesDeclared`).
     */
    operatorScope?: OperatorScope
  }
}

/** Route config: the route needs an `admin` key (the full scope). */
export const forAdmin = { operatorScope: 'admin' } as const
/** Route config: the route is `@tessera/verifier`'s too (an `admin` key may use it as well). */
export const forVerifier = { operatorScope: 'verifier' } as const

/** The OpenAPI tag of every admin route. */
export const tags = ['admin']

/** The admin request's actor for the audit log: the operator key, the address, the request id. */
export const operator = (request: FastifyRequest): Actor =>
  actorOf(request, { type: 'admin', id: request.adminKeyId ?? undefined })

/** `limit` as validated by the schema (1-100), 100 when absent. */
export const pageSize = (limit: string | undefined) => (limit === undefined ? 100 : Number(limit))

/** The next page as a Link header: absolute, never a credential, with every filter given. */
export function nextPage(
  app: FastifyInstance,
  ctx: AppContext,
  reply: FastifyReply,
  path: string,
  params: Record<string, string | undefined>,
) {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) query.set(name, value)
  const base = ctx.config.http.publicUrl ?? app.publicUrl
  reply.header('Link', `<${base}/admin/v1${path}?${query}>; rel="next"`)
}
