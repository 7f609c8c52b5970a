import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { forAdmin, operator, tags } from './common.js'
import { adminErrors, operatorKey, UsernameParams } from './schemas.js'

/** A trust policy (src/exchange/policies.ts), as the API shows it. */
export const TrustPolicyObject = Type.Object({
  issuer: Type.String({ description: "The identity token's iss, exactly: an https URL" }),
  audience: Type.String({ description: 'A value its aud must hold' }),
  subject: Type.String({ description: 'Its sub, exactly or as a glob (* any run of characters)' }),
  claims: Type.Optional(
    Type.Record(Type.String(), Type.String(), {
      description: 'Further claims (repository, ref, environment, ...), each matched as a glob',
    }),
  ),
  scopes: Type.Array(Type.String(), { description: 'The most the temporary token may hold' }),
  maxTtl: Type.Integer({ description: "The temporary token's life at most, seconds (60-3600)" }),
})

const Policies = Type.Array(TrustPolicyObject)

/** An account's workload identity trust policies (docs/machines.md): read them, set them. */
export function trustPolicyRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/accounts/:username/trust-policies',
    {
      config: forAdmin,
      schema: {
        summary: "Read an account's trust policies",
        tags,
        security: operatorKey,
        params: UsernameParams,
        response: { 200: Policies, ...adminErrors(404) },
      },
    },
    async (request) => {
      const { username } = request.params as { username: string }
      await ctx.accounts.get(username)
      return (await ctx.exchange.policies(username)) ?? []
    },
  )

  app.put(
    '/accounts/:username/trust-policies',
    {
      config: forAdmin,
      schema: {
        summary: "Set an account's trust policies",
        description:
          'Replaces them (at most 20; `[]` removes them all). Which workload identities may ' +
          'exchange a signed identity token (`POST /tokens/v2/{username}/exchange`) for a ' +
          "temporary token, with what scopes (among the account's) for how long. Audited as " +
          '`trust_policies.changed`. 422 `resources are invalid` with `details` naming the ' +
          'field that is wrong.',
        tags,
        security: operatorKey,
        params: UsernameParams,
        // Checked by the service, whose sentences name the field: the schema documents it.
        body: Type.Unknown({ description: 'A list of trust policies' }),
        response: { 200: Policies, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { username } = request.params as { username: string }
      const account = await ctx.accounts.get(username)
      return ctx.exchange.setPolicies(account, request.body, operator(request))
    },
  )
}
