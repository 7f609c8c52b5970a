import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { forAdmin, operator, tags } from './common.js'
import { adminErrors, operatorKey, UsernameParams } from './schemas.js'

const Days = (description: string, minimum: number, maximum: number) =>
  Type.Optional(Type.Integer({ minimum, maximum, description }))

/** A token policy (src/token-policy.ts); every key optional. */
export const TokenPolicyObject = Type.Object(
  {
    maxSkLifetimeDays: Days(
      'New secret tokens must end (expiresAt) within this many days',
      1,
      3650,
    ),
    pkAllowedUrls: Type.Optional(
      Type.Boolean({ description: 'New public tokens must carry allowed URLs' }),
    ),
    idleDays: Days('Tokens unused this many days are deleted, warned 7 days before', 8, 3650),
    rollGraceMaxHours: Days("A roll's grace (its expires) at most this many hours ahead", 0, 24),
  },
  { additionalProperties: false },
)

const PolicyView = Type.Object({
  own: TokenPolicyObject,
  plan: TokenPolicyObject,
  effective: TokenPolicyObject,
})

const about =
  '`own` is what the account sets, `plan` what its plan sets in the catalog, and `effective` ' +
  'what holds: the stricter of the two, key by key.'

/** An account's token policy: read it, set it. */
export function tokenPolicyRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/accounts/:username/token-policy',
    {
      config: forAdmin,
      schema: {
        summary: "Read an account's token policy",
        description: about,
        tags,
        security: operatorKey,
        params: UsernameParams,
        response: { 200: PolicyView, ...adminErrors(404) },
      },
    },
    async (request) => {
      const { username } = request.params as { username: string }
      return ctx.accounts.tokenPolicy(await ctx.accounts.get(username))
    },
  )

  app.put(
    '/accounts/:username/token-policy',
    {
      config: forAdmin,
      schema: {
        summary: "Set an account's token policy",
        description:
          'Replaces what the account sets (a key left out or null: no rule of its own). ' +
          `${about} Audited and sent as \`token_policy.changed\`. Tokens made before keep ` +
          'working; creates, updates and rolls are checked from then on. 422 `resources are ' +
          'invalid` for a value out of range, or looser than the plan sets (`details` says which).',
        tags,
        security: operatorKey,
        params: UsernameParams,
        // Checked by the service, whose sentences name the key: the schema documents it.
        body: Type.Unknown({ description: 'A token policy object' }),
        response: { 200: PolicyView, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { username } = request.params as { username: string }
      return ctx.accounts.setTokenPolicy(username, request.body, operator(request))
    },
  )
}
