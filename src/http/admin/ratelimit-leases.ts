import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { leaseLimits } from '../../verification/leases.js'
import { forVerifier, tags } from './common.js'
import { LimitLeaseAnswer, LimitLeaseBody } from './introspect-schemas.js'
import { adminErrors, operatorKey } from './schemas.js'

type Answer = Static<typeof LimitLeaseAnswer>

const description = [
  "A block of a token's rate limits for a verifier (`@tessera/verifier`) to spend in process, as",
  'it spends credit leases: up to `want` verifications of every limit on the token (its',
  "account's, then its own, in introspection's order), each taking the limit's `cost`, taken off",
  "the same count as Tessera's own verifications at once: every verifier and every instance share",
  'one exact count, so passes never exceed a limit. The block is never more than the least any',
  'limit has left, and nothing at all when one has less than one verification: `granted: 0` and',
  "`ratelimit` names it. Each limit's block ends with its window (`reset`, epoch ms; `ttlMs` from",
  "Tessera's now); what is left of it then is lost, never handed back: a verifier's refusals may",
  'come early by at most the blocks left unspent, never late. A token that is not valid now gets',
  '`{granted: 0, code, ratelimits: []}` (`code` as retrieve says it). 422 `resources are invalid`',
  'for a bad body.',
].join(' ')

/** `POST /admin/v1/ratelimit-leases`: a verifier's block of a token's limits. */
export function ratelimitLeaseRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post(
    '/ratelimit-leases',
    {
      config: forVerifier,
      schema: {
        tags,
        security: operatorKey,
        summary: 'Lease rate limits to a verifier',
        description,
        body: LimitLeaseBody,
        response: { 200: LimitLeaseAnswer, ...adminErrors(422) },
      },
    },
    async (request): Promise<Answer> => {
      const { token, want } = request.body as Static<typeof LimitLeaseBody>
      const lease = await leaseLimits(ctx, token, want)
      if ('code' in lease) return { granted: 0, code: lease.code, ratelimits: [] }
      const ratelimits = lease.limits.map(({ applied, result, granted }) => ({
        name: applied.rule.name,
        limit: result.limit,
        remaining: result.remaining,
        reset: result.reset,
        duration: applied.rule.duration,
        cost: applied.cost,
        granted,
        ttlMs: Math.max(0, result.reset - lease.at),
      }))
      const refused = lease.refused?.rule.name
      return {
        granted: lease.granted,
        ...(refused === undefined ? {} : { ratelimit: refused }),
        ratelimits,
      }
    },
  )
}
