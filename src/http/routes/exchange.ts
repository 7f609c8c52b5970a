import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { accessTokenType, grantType, jwtType } from '../../exchange/service.js'
import { exchangeWait } from '../../verification/exchanges.js'
import { actorOf } from '../actor.js'
import { UsernameParams } from '../schemas.js'

/** The form is a JWT (at most 16 KiB) and a few names: anything larger is not an exchange. */
const bodyLimit = 32 * 1024
const tags = ['tokens']

const OAuthError = Type.Object({
  error: Type.String(),
  error_description: Type.String(),
})

/**
 * RFC 8693 token exchange (docs/machines.md): a workload's identity token for a temporary token
 * of the account. Its own context: the form parser serves this route alone. Authenticated by the
 * identity token itself, against the account's trust policies; limited per account like the
 * account's requests (RATE_LIMIT_PER_MINUTE a minute, by client address, then by account once the
 * identity holds), so that refusals cannot flood its audit log.
 */
export function exchangeRoutes(app: FastifyInstance, ctx: AppContext) {
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit },
      (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
    )
    scope.post(
      '/tokens/v2/:username/exchange',
      {
        schema: {
          operationId: 'exchangeToken',
          summary: "Exchange a workload's identity token for a temporary token",
          description:
            'Tessera: RFC 8693 token exchange. An `application/x-www-form-urlencoded` body with ' +
            `\`grant_type=${grantType}\`, \`subject_token\` (a JWT from a CI system or cloud), ` +
            `\`subject_token_type=${jwtType}\` and an optional space-separated \`scope\`. When ` +
            "one of the account's trust policies admits the token (issuer, signature by the " +
            "issuer's published keys, time, audience, subject and claims; each jti once), the " +
            "answer is a temporary token with the policy's scopes (narrowed to `scope`) for its " +
            '`maxTtl`. Refusals are RFC 6749 section 5.2 errors with 400: `invalid_request`, ' +
            "`invalid_grant`, `invalid_scope`; 503 `temporarily_unavailable` when the issuer's " +
            'keys cannot be fetched. Every exchange and refusal is audited in the account.',
          tags,
          params: UsernameParams,
          response: {
            200: Type.Object({
              access_token: Type.String(),
              issued_token_type: Type.Literal(accessTokenType),
              token_type: Type.Literal('Bearer'),
              expires_in: Type.Integer(),
              scope: Type.String(),
            }),
            400: OAuthError,
            429: OAuthError,
            503: OAuthError,
          },
        },
      },
      async (request, reply) => {
        const { username } = request.params as { username: string }
        // RFC 6749 section 5.1: token answers are never cached.
        reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
        // Per client address first: a stranger's requests cannot use up the account's budget,
        // which the exchange charges once the identity is proven (ExchangeService).
        const perMinute = ctx.config.rateLimitPerMinute
        const now = ctx.tokens.now()
        const wait = await exchangeWait(ctx.rateLimiter, `ip:${request.ip}`, now, perMinute)
        if (wait !== undefined) {
          return reply
            .code(429)
            .header('retry-after', String(wait))
            .send({
              error: 'temporarily_unavailable',
              error_description: `too many exchanges from this address: try again in ${wait} s`,
            })
        }
        const body = request.body
        const form: Record<string, string> =
          typeof body === 'object' && body !== null && !Array.isArray(body)
            ? (body as Record<string, string>)
            : {}
        const actor = actorOf(request, { type: 'anonymous' })
        const answer = await ctx.exchange.exchange(username, form, actor)
        if (answer.status === 429) reply.header('retry-after', String(answer.retryAfter ?? 60))
        return reply.code(answer.status).send(answer.body)
      },
    )
  })
}
