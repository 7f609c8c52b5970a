import type { FastifyInstance } from 'fastify'
import {
  isOperatorScope,
  type OperatorScope,
  operatorScopes,
  scopeAllows,
} from '../../admin/keys.js'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import { withoutCors } from '../headers.js'
import { accountRoutes } from './accounts.js'
import { auditRoutes } from './audit.js'
import { creditsRoutes } from './credits.js'
import { eventRoutes } from './events.js'
import { introspectRoutes } from './introspect.js'
import { leakAdminRoutes } from './leaks.js'
import { memberRoutes } from './members.js'
import { ratelimitLeaseRoutes } from './ratelimit-leases.js'
import { accountRatelimitRoutes } from './ratelimits-accounts.js'
import { namespaceRatelimitRoutes } from './ratelimits-namespaces.js'
import { adminTag, securitySchemes } from './schemas.js'
import { tokenPolicyRoutes } from './token-policy.js'
import { accountTokenRoutes } from './tokens.js'
import { trustPolicyRoutes } from './trust-policies.js'
import { usageRoutes } from './usage.js'
import { verificationRoutes } from './verifications.js'
import { webhookRoutes } from './webhooks.js'

/** What the OpenAPI document says of the admin API as a whole. */
export const adminDocs = { tags: [adminTag], securitySchemes }

const bearer = /^Bearer +(\S+) *$/i

/**
 * RFC 6750 section 3.1: a key given and refused is an `invalid_token`; a request without one (or
 * under another scheme) is told only that a bearer key is needed.
 */
const challenge = (presented: string | undefined) =>
  presented === undefined ? 'Bearer realm="admin"' : 'Bearer realm="admin", error="invalid_token"'

/** An admin route as declared: its method, its full path, the operator scope it needs. */
export interface AdminRoute {
  method: string
  url: string
  scope: OperatorScope
}

const tables = new WeakMap<FastifyInstance, AdminRoute[]>()

/** The admin routes of an app (its HEAD routes too), in the order declared. */
export const adminRouteTable = (app: FastifyInstance): readonly AdminRoute[] =>
  tables.get(app) ?? []

/**
 * Every route of `admin` must declare the operator scope it needs (`config.operatorScope`): one
 * that does not stops start-up, so that no route is open to a verifier's key by being forgotten.
 * Each route is written into `table`.
 */
export function operatorScopesDeclared(admin: FastifyInstance, table: AdminRoute[]): void {
  admin.addHook('onRoute', (route) => {
    const scope = route.config?.operatorScope
    const methods = [route.method].flat()
    if (!isOperatorScope(scope)) {
      throw new Error(
        `${methods.join(',')} ${route.url} declares no operator scope ` +
          `(config.operatorScope: ${operatorScopes.join(' or ')})`,
      )
    }
    for (const method of methods) table.push({ method, url: route.url, scope })
  })
}

/**
 * The admin API under /admin/v1, for the operator's own backend. Its own plugin: the operator
 * key check and the 404 of unknown paths stay here, off the token API's path (a service's
 * refusal is an ApiError, which the app's error handler answers). Only the Authorization header
 * is read: an `access_token` is never a credential.
 */
export function adminRoutes(app: FastifyInstance, ctx: AppContext): void {
  const table: AdminRoute[] = []
  tables.set(app, table)
  app.register(
    async (admin) => {
      operatorScopesDeclared(admin, table)
      admin.decorateRequest('adminKeyId', null)
      admin.decorateRequest('adminKeyScope', null)
      admin.addHook('onRequest', (request, reply, done) => {
        const presented = bearer.exec(request.headers.authorization ?? '')?.[1]
        const key = presented === undefined ? undefined : ctx.adminKeys.verify(presented)
        if (key === undefined) {
          reply.header('www-authenticate', challenge(presented))
          return done(new ApiError('unauthorized'))
        }
        request.adminKeyId = key.id
        request.adminKeyScope = key.scope
        // Before the body is read. An unknown path needs no scope (any key is told 404); a
        // route that somehow declared none needs the full one.
        const needed =
          request.routeOptions.config.operatorScope ?? (request.is404 ? undefined : 'admin')
        if (needed !== undefined && !scopeAllows(key.scope, needed)) {
          return done(
            new ApiError(
              'operatorScope',
              `key ${key.id} has the ${key.scope} scope; ` +
                `${request.method} ${request.routeOptions.url} needs the ${needed} scope`,
            ),
          )
        }
        done()
      })
      // For servers, not browsers: no CORS (the app's first hook set the token API's), on
      // every answer here, the app's early refusals (503, HTTPS required) included.
      admin.addHook('onSend', (_request, reply, payload, done) => {
        withoutCors(reply)
        done(null, payload)
      })
      // Unknown paths here answer 401 too without a key: nothing is told before it.
      admin.setNotFoundHandler(() => {
        throw new ApiError('notFound')
      })
      accountRoutes(admin, ctx)
      accountTokenRoutes(admin, ctx)
      auditRoutes(admin, ctx)
      introspectRoutes(admin, ctx)
      ratelimitLeaseRoutes(admin, ctx)
      eventRoutes(admin, ctx)
      webhookRoutes(admin, ctx)
      memberRoutes(admin, ctx)
      leakAdminRoutes(admin, ctx)
      usageRoutes(admin, ctx)
      verificationRoutes(admin, ctx)
      creditsRoutes(admin, ctx)
      tokenPolicyRoutes(admin, ctx)
      trustPolicyRoutes(admin, ctx)
      accountRatelimitRoutes(admin, ctx)
      namespaceRatelimitRoutes(admin, ctx)
    },
    { prefix: '/admin/v1' },
  )
}
