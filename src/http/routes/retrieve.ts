import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import type { Validation as Checked } from '../../tokens/validator.js'
import { answerRetrieve } from '../ahead/answers.js'
import { tokenApi } from '../documented.js'
import { requestFacts } from '../facts.js'
import { andThen, presentedToken, twoTokens, twoTokensDetails } from '../guard.js'
import { handedOver } from '../handover.js'
import { AccessTokenQuery, errorResponses, Validation } from '../schemas.js'

/** Retrieve through Fastify: what the fast path (ahead/retrieve.ts) leaves to it. */
export function retrieveRoute(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/tokens/v2',
    {
      schema: {
        ...tokenApi('retrieveToken'),
        summary: 'Retrieve and validate a token',
        querystring: AccessTokenQuery,
        response: { 200: Validation, ...errorResponses(422, 429) },
      },
    },
    // Not async: a cached or temporary token is answered without a promise.
    (request, reply) => {
      const token = presentedToken(request)
      if (typeof token !== 'string') {
        const why = token === twoTokens ? twoTokensDetails : undefined
        return answerRetrieve(ctx, undefined, request.ip, reply, why)
      }
      const facts = requestFacts(ctx, 'retrieve', request, reply)
      const answer = (validation: Checked) =>
        answerRetrieve(ctx, validation, request.ip, reply, undefined, facts)
      return andThen(handedOver(request.raw) ?? ctx.tokens.validate(token), answer)
    },
  )
}
