import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import type { CreditTarget } from '../../usage/credits.js'
import { forAdmin, forVerifier, operator, tags } from './common.js'
import {
  AmountBody,
  CreditsObject,
  LeaseAnswer,
  LeaseBody,
  SetCreditsBody,
} from './credit-schemas.js'
import { adminErrors, operatorKey, TokenParams, UsernameParams } from './schemas.js'

/** The two owners of credits: an account (shared by its tokens) and one token. */
const owners = [
  {
    path: '/accounts/:username/credits',
    params: UsernameParams,
    whose: "the account's (shared by all its tokens)",
    missing: '404 `No such user` for an unknown account',
  },
  {
    path: '/accounts/:username/tokens/:token_id/credits',
    params: TokenParams,
    whose: "the token's",
    missing: '404 `No such user` for an unknown account, `Not found` for an unknown token',
  },
] as const

const targetOf = (request: FastifyRequest): CreditTarget => {
  const { username, token_id } = request.params as { username: string; token_id?: string }
  return token_id === undefined ? { account: username } : { account: username, tokenId: token_id }
}

const none = '404 `Not found` when there are no credits.'

/** Credits of accounts and tokens (docs/credits.md), and the verifiers' leases. */
export function creditsRoutes(app: FastifyInstance, ctx: AppContext): void {
  for (const owner of owners) {
    readAndSet(app, ctx, owner)
    adjust(app, ctx, owner)
  }
  leases(app, ctx)
}

type Owner = (typeof owners)[number]

/** GET, PUT and DELETE of a balance. */
function readAndSet(app: FastifyInstance, ctx: AppContext, owner: Owner) {
  const common = { tags, security: operatorKey, params: owner.params }
  app.get(
    owner.path,
    {
      config: forAdmin,
      schema: {
        ...common,
        summary: `Get ${owner.whose} credits`,
        description:
          'The balance as it stands, after any refill that was due and, for a plan balance, ' +
          `the account's current plan (read only: nothing is written). ${owner.missing}; ${none}`,
        response: { 200: CreditsObject, ...adminErrors(404) },
      },
    },
    async (request) => {
      const credits = await ctx.credits.get(targetOf(request))
      if (credits === undefined) throw new ApiError('notFound', 'there are no credits')
      return credits
    },
  )

  app.put(
    owner.path,
    {
      config: forAdmin,
      schema: {
        ...common,
        summary: `Set ${owner.whose} credits`,
        description:
          '`remaining` from now: a new period begins, thresholds are armed again, leases granted ' +
          'before are not credited back. `refill` null removes the refill, absent keeps it. ' +
          "The balance is then the operator's: it no longer follows the account's plan. " +
          `Sends \`credits.changed\`. ${owner.missing}; 422 \`resources are invalid\` for a bad body.`,
        body: SetCreditsBody,
        response: { 200: CreditsObject, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const body = request.body as Static<typeof SetCreditsBody>
      if (body.refill?.interval === 'daily' && body.refill.day !== undefined) {
        throw new ApiError('invalidResources', 'a daily refill takes no day')
      }
      return ctx.credits.set(targetOf(request), body, operator(request))
    },
  )

  app.delete(
    owner.path,
    {
      config: forAdmin,
      schema: {
        ...common,
        summary: `Remove ${owner.whose} credits`,
        description:
          "No longer metered; an account on a plan with credits gets the plan's afresh at its " +
          `next use. Sends \`credits.changed\`. ${owner.missing}; ${none}`,
        response: { 204: Type.Null(), ...adminErrors(404) },
      },
    },
    async (request, reply) => {
      await ctx.credits.remove(targetOf(request), operator(request))
      return reply.code(204).send()
    },
  )
}

/** POST .../increment and .../decrement. */
function adjust(app: FastifyInstance, ctx: AppContext, owner: Owner) {
  for (const [action, sign] of [
    ['increment', 1],
    ['decrement', -1],
  ] as const) {
    app.post(
      `${owner.path}/${action}`,
      {
        config: forAdmin,
        schema: {
          tags,
          security: operatorKey,
          params: owner.params,
          summary: `${sign > 0 ? 'Add to' : 'Take from'} ${owner.whose} credits`,
          description:
            (sign > 0
              ? 'Adds `amount` to the remaining credits and to the balance (the share spent falls). '
              : 'Takes `amount` off the remaining credits, never below 0 (it counts as spent). ') +
            `Sends \`credits.changed\`. ${owner.missing}; ${none} 422 \`resources are invalid\` ` +
            'for an amount that is not a whole number of 1 or more, or a balance past 2^53 - 1.',
          body: AmountBody,
          response: { 200: CreditsObject, ...adminErrors(404, 422) },
        },
      },
      async (request) => {
        const { amount } = request.body as Static<typeof AmountBody>
        return ctx.credits.adjust(targetOf(request), sign * amount, operator(request))
      },
    )
  }
}

/** POST /credits/leases: a verifier's lease. */
function leases(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/credits/leases',
    {
      config: forVerifier,
      schema: {
        tags,
        security: operatorKey,
        summary: 'Lease credits to a verifier',
        description:
          "Takes up to `want` credits off the token's balance and its account's at once (both " +
          'or none), to spend locally until `expires`: a minute, or the next refill if sooner; ' +
          "`ttlMs` says the same as milliseconds from Tessera's now, for a verifier's own clock. " +
          'The unspent part goes back with the lease in a usage report: once, to the account ' +
          'and token it was granted to, and only in the period it was granted in. `granted` ' +
          'null: neither carries credits; 0: none left. ' +
          '404 `No such user` for an unknown account, `Not found` for a token not of it.',
        body: LeaseBody,
        response: { 200: LeaseAnswer, ...adminErrors(404, 422) },
      },
    },
    async (request) => {
      const { account, token, want } = request.body as Static<typeof LeaseBody>
      const answer = await ctx.credits.lease(account, token, want, operator(request))
      if (answer.expires === undefined) return answer
      // Read after the grant: never longer than what the lease has left.
      const ttlMs = Math.max(0, Date.parse(answer.expires) - ctx.tokens.now())
      return { ...answer, ttlMs }
    },
  )
}
