import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { AppContext } from '../../context.js'

/** Paths a load balancer probes: no token, no rate limit, no HTTPS rule, no request log. */
export const probePaths = new Set(['/healthz', '/readyz'])

const Health = Type.Object({ status: Type.String() })
/** With workers (WORKERS > 1), which one answered. */
const Ready = Type.Object({ status: Type.String(), worker: Type.Optional(Type.Integer()) })
const NotReady = Type.Object({ message: Type.String(), details: Type.String() })

/** How long one database probe answers for every /readyz: probes cannot flood the database. */
const probeMs = 1000

/**
 * `/healthz`: the process answers. `/readyz`: it should be sent requests: not shutting down,
 * migrations applied, the database answering, and on PostgreSQL the change feed live (without
 * it the instance still answers, but every validation goes to the database).
 */
export function healthRoutes(app: FastifyInstance, ctx: AppContext) {
  let probe: { at: number; answer: Promise<string | undefined> } | undefined
  const databaseProblem = () => {
    const now = Date.now()
    if (probe === undefined || now - probe.at >= probeMs) {
      // Anyone may probe: the answer says what is wrong, the log says where (an address, a
      // user name or a host in the driver's message is nobody else's business).
      const answer = sql`select 1`.execute(ctx.db).then(
        () => undefined,
        (err: Error) => {
          ctx.log.warn(
            { err: err.message.split('\n')[0] },
            'readiness: the database does not answer',
          )
          return 'the database does not answer'
        },
      )
      probe = { at: now, answer }
    }
    return probe.answer
  }

  const notReady = async (): Promise<string | undefined> => {
    if (ctx.draining) return 'shutting down'
    if (!ctx.ready) return 'the database is not reachable yet (migrations pending)'
    const problem = await databaseProblem()
    if (problem !== undefined) return problem
    if (!ctx.feedLive) return 'the change feed is not live'
    return undefined
  }

  const quiet = { logLevel: 'warn' as const }
  app.get(
    '/healthz',
    { ...quiet, schema: { hide: true, response: { 200: Health } } },
    async () => ({ status: 'ok' }),
  )
  app.get(
    '/readyz',
    { ...quiet, schema: { hide: true, response: { 200: Ready, 503: NotReady } } },
    async (_request, reply) => {
      ctx.probedAt = Date.now()
      const problem = await notReady()
      if (problem === undefined) {
        return ctx.worker === undefined
          ? { status: 'ready' }
          : { status: 'ready', worker: ctx.worker }
      }
      return reply.code(503).send({ message: 'Service Unavailable', details: problem })
    },
  )
}
