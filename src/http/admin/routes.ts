import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import { accountRoutes } from './accounts.js'
import { auditRoutes } from './audit.js'
import { creditsRoutes } from './credits.js'
import { eventRoutes } from './events.js'
import { introspectRoutes } from './introspect.js'
import { leakAdminRoutes } from './leaks.js'
import { memberRoutes } from './members.js'
import { adminTag, securitySchemes } from './schemas.js'
import { tokenPolicyRoutes } from './token-policy.js'
import { accountTokenRoutes } from './tokens.js'
import { usageRoutes } from './usage.js'
import { webhookRoutes } from './webhooks.js'

/** What the OpenAPI document says of the admin API as a whole. */
export const adminDocs = { tags: [adminTag], securitySchemes }

const bearer = /^Bearer +(\S+) *$/i

/**
 * The admin API under /admin/v1, for the operator's own backend. Its own plugin: the operator
 * key check and the 404 of unknown paths stay here, off the token API's path (a service's
 * refusal is an ApiError, which the app's error handler answers). Only the Authorization header
 * is read: an `access_token` is never a credential.
 */
export function adminRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.register(
    async (admin) => {
      admin.decorateRequest('adminKeyId', null)
      admin.addHook('onRequest', (request, reply, done) => {
        const presented = bearer.exec(request.headers.authorization ?? '')?.[1]
        const id = presented === undefined ? undefined : ctx.adminKeys.verify(presented)
        if (id === undefined) {
          reply.header('www-authenticate', 'Bearer realm="admin"')
          return done(new ApiError('unauthorized'))
        }
        request.adminKeyId = id
        done()
      })
      // Unknown paths here answer 401 too without a key: nothing is told before it.
      admin.setNotFoundHandler(() => {
        throw new ApiError('notFound')
      })
      accountRoutes(admin, ctx)
      accountTokenRoutes(admin, ctx)
      auditRoutes(admin, ctx)
      introspectRoutes(admin, ctx)
      eventRoutes(admin, ctx)
      webhookRoutes(admin, ctx)
      memberRoutes(admin, ctx)
      leakAdminRoutes(admin, ctx)
      usageRoutes(admin, ctx)
      creditsRoutes(admin, ctx)
      tokenPolicyRoutes(admin, ctx)
    },
    { prefix: '/admin/v1' },
  )
}
