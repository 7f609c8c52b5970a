import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { auditActions } from '../../audit/events.js'
import { auditFilter } from '../../audit/query.js'
import type { AppContext } from '../../context.js'
import { forAdmin, nextPage, pageSize, tags } from './common.js'
import {
  AuditEventObject,
  AuditQuery,
  adminErrors,
  operatorKey,
  UsernameParams,
} from './schemas.js'

const paging =
  'Newest first. `action` is a comma-separated list of ' +
  `${auditActions.join(', ')}; \`since\` (inclusive) and \`until\` (exclusive) are ISO 8601 ` +
  'dates or timestamps. When more events follow, a `Link: <...>; rel="next"` header gives the ' +
  'next page (`start` = the id of the last event shown), with the same filters. 422 ' +
  '`resources are invalid` for an unknown action or a bad time.'

/** The audit log, service-wide and per account. */
export function auditRoutes(app: FastifyInstance, ctx: AppContext) {
  const list = async (
    request: FastifyRequest,
    reply: FastifyReply,
    path: string,
    username?: string,
  ) => {
    const q = request.query as Static<typeof AuditQuery>
    const limit = pageSize(q.limit)
    const filter = auditFilter({ ...q, username, limit: limit + 1 })
    const events = await ctx.audit.list(filter)
    const page = events.slice(0, limit)
    const last = page.at(-1)
    if (events.length > limit && last !== undefined) {
      const { action, since, until } = q
      nextPage(app, ctx, reply, path, {
        limit: String(limit),
        start: last.id,
        action,
        since,
        until,
      })
    }
    return page
  }

  app.get(
    '/audit',
    {
      config: forAdmin,
      schema: {
        summary: 'Read the audit log',
        description: paging,
        tags,
        security: operatorKey,
        querystring: AuditQuery,
        response: { 200: Type.Array(AuditEventObject), ...adminErrors(422) },
      },
    },
    (request, reply) => list(request, reply, '/audit'),
  )

  app.get(
    '/accounts/:username/audit',
    {
      config: forAdmin,
      schema: {
        summary: "Read an account's audit log",
        description: `${paging} The events of a deleted account remain readable here.`,
        tags,
        security: operatorKey,
        params: UsernameParams,
        querystring: AuditQuery,
        response: { 200: Type.Array(AuditEventObject), ...adminErrors(422) },
      },
    },
    (request, reply) => {
      const { username } = request.params as Static<typeof UsernameParams>
      return list(request, reply, `/accounts/${encodeURIComponent(username)}/audit`, username)
    },
  )
}
