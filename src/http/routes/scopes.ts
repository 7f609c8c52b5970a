import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import type { AccountRecord } from '../../db/repositories.js'
import { tokenApi } from '../documented.js'
import { errorResponses, ScopeObject, UsernameParams } from '../schemas.js'

export function scopeRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/scopes/v1/:username',
    {
      config: { scope: 'scopes:list' },
      schema: {
        ...tokenApi('listScopes'),
        summary: 'List the scopes available to an account',
        params: UsernameParams,
        response: { 200: Type.Array(ScopeObject), ...errorResponses(401, 404, 429) },
      },
    },
    async (request) => {
      const { plan, features } = request.account as AccountRecord
      return ctx.catalog
        .availableTo(plan, features)
        .map((s) => (s.public ? s : { id: s.id, description: s.description }))
    },
  )
}
