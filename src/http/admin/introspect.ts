import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { introspect } from '../../verification/introspection.js'
import { requestFacts } from '../facts.js'
import { forVerifier, operator, tags } from './common.js'
import { IntrospectBody, Introspection } from './introspect-schemas.js'
import { adminErrors, operatorKey } from './schemas.js'

const description = [
  'RFC 7662 token introspection for the APIs behind Tessera: everything a resource server needs',
  'in one round trip. The body is JSON `{"token": "...", "token_type_hint"?: "...", "ip"?: "...",',
  '"cost"?: n, "count"?: false}` or the RFC\'s form, `application/x-www-form-urlencoded` `token=...` (a repeated',
  'field takes its first value; the hint is ignored). A missing, empty or non-string `token`, a',
  '`cost` that is not a whole number of 0 or more, or a body that is neither, answers 422',
  '`resources are invalid`.',
  "The rules are retrieve's (`GET /tokens/v2`), and `code` is what retrieve says of the same",
  'string. An active token answers `{active: true, scope, username, token_type: "Bearer", exp',
  "(a tk's expiry; a pk's or sk's end, the earlier of its expiresAt and a rolled token's end, when it has one), iat, client_id, id (pk and sk), usage, allowedUrls (when restricted), code:",
  "\"TokenValid\"}`: `scope` is space-separated; `iat` is a tk's issue time and a pk's or sk's",
  "creation time, in epoch seconds; `client_id` is the token's `client` (`api`), as token",
  'objects and retrieve say it; `id` is the token id, which a tk does not carry (it names no',
  'parent token), so a tk has none. Any other token answers `{active: false, code}` and nothing',
  'more: `TokenMalformed`, `TokenInvalid`, `TokenExpired`, or `TokenRevoked` (deleted, or its',
  "account disabled or deleted). Tessera: with `ip` (the caller's client address), a valid",
  'token restricted to IP ranges (`allowedIps`) that do not hold it answers `{active: false,',
  'code: "TokenValid", reason: "ip_not_allowed"}`. An expired or revoked string that the account',
  "now holding its name did not make (a deleted account's, or one before the account was",
  'created) adds `unowned: true`: its refusals are counted against nobody.',
  "Rate limits (docs/ratelimits.md): an active token's introspection is one use of every limit on",
  "it (its account's, then its own), as retrieve is, before any credit is spent; when a plan, the",
  'account or the token sets limits, the answer lists them all: `ratelimits: [{name, limit,',
  'remaining, reset}]` (`reset` in epoch milliseconds). When one has nothing left the answer is',
  '`{active: false, code: "TokenValid", reason: "rate_limited", ratelimit: "<its name>",',
  'ratelimits}` and nothing is consumed.',
  'Credits (docs/credits.md): when the token or its account carries credits, an active answer',
  'spends `cost` of both (default 1; 0 spends nothing) and adds `credits: {token?, account?}`,',
  'the balances after; when either is short, nothing is spent (the limits it took are given back)',
  'and the answer is `{active: false, code: "TokenValid", reason: "credits_exhausted"}`.',
  'Every introspection is counted once in the usage by its outcome: valid, malformed, invalid,',
  'expired, revoked, ip_not_allowed, rate_limited or credits_exhausted. With `count: false` it is',
  'not, and its limits are read, never consumed nor refused: `ratelimits` shows them as they',
  'stand. A verifier asks so, as it reports each of its own decisions and takes every pass from',
  'rate-limit leases (`POST /admin/v1/ratelimit-leases`), off the same count: a verifier cannot',
  'pass more than a limit allows, and nothing is counted twice.',
].join(' ')

/** The first `token`, `token_type_hint`, `ip` and `cost` of a form; nothing else is kept. */
function formFields(body: string) {
  const form = new URLSearchParams(body)
  const fields: Record<string, string | number> = {}
  for (const name of ['token', 'token_type_hint', 'ip', 'cost']) {
    const value = form.get(name)
    if (value !== null) fields[name] = value
  }
  // A whole number as JSON gives it; anything else stays text, which the schema refuses.
  const cost = fields.cost
  if (typeof cost === 'string' && /^[0-9]{1,15}$/.test(cost)) fields.cost = Number(cost)
  return fields
}

/**
 * `POST /admin/v1/introspect`: a token string as RFC 7662 describes it, for operators only (the
 * decision is src/verification/introspection.ts'); and the verifiers' rate-limit leases.
 */
export function introspectRoutes(app: FastifyInstance, ctx: AppContext): void {
  // Its own context: the form parser serves this route only, never the token API.
  app.register(async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_request, body, done) => done(null, formFields(body as string)),
    )

    scope.post(
      '/introspect',
      {
        config: forVerifier,
        schema: {
          summary: 'Introspect a token',
          description,
          tags,
          security: operatorKey,
          body: IntrospectBody,
          response: { 200: Introspection, ...adminErrors(422) },
        },
      },
      async (request, reply) => {
        const ask = request.body as Static<typeof IntrospectBody>
        // The row's client is the one the caller names (its own client's), not the caller.
        const f = requestFacts(ctx, 'introspection', request, reply)
        const facts = f && { ...f, ip: ask.ip, headers: {} }
        return introspect(ctx, ask, operator(request), facts)
      },
    )
  })
}
