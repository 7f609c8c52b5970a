import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Actor } from '../../audit/events.js'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import type { Validation, ValidationCode } from '../../tokens/validator.js'
import { outcomeOfCode } from '../../usage/attribution.js'
import { outcomeIndex } from '../../usage/outcomes.js'
import { forVerifier, operator, tags } from './common.js'
import { adminErrors, IntrospectBody, Introspection, operatorKey } from './schemas.js'

type Answer = Static<typeof Introspection>
type Valid = Extract<Validation, { code: 'TokenValid' }>

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
  'Credits (docs/credits.md): when the token or its account carries credits, an active answer',
  'spends `cost` of both (default 1; 0 spends nothing) and adds `credits: {token?, account?}`,',
  'the balances after; when either is short, nothing is spent and the answer is `{active:',
  'false, code: "TokenValid", reason: "credits_exhausted"}`.',
  'Every introspection is counted once in the usage by its outcome: valid, malformed, invalid,',
  'expired, revoked, ip_not_allowed or credits_exhausted; with `count: false` it is not (a',
  'verifier asks so, as it reports each of its own decisions).',
].join(' ')

const inactive = (code: Validation['code']): Answer => ({ active: false, code })

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
 * The account as the database says it now, when it is there and enabled. The validator reads
 * the instance's account cache, which may lag another instance's change by up to a second; a
 * verifier caches this answer, so it must not describe a token that is no longer good.
 */
async function current(ctx: AppContext, username: string) {
  const account = await ctx.accounts.get(username).catch((err: unknown) => {
    if (err instanceof ApiError && err.kind === 'noSuchUser') return undefined
    throw err
  })
  return account?.disabled === false ? account : undefined
}

/** A valid pk or sk as its record says it now; revoked if it went since it was validated. */
async function permanent(ctx: AppContext, validation: Valid): Promise<Answer> {
  const { principal } = validation
  const account = await current(ctx, principal.username)
  if (account === undefined || principal.tokenId === undefined) return inactive('TokenRevoked')
  const token = await ctx.tokens.get(account, principal.tokenId).catch((err: unknown) => {
    if (err instanceof ApiError && err.kind === 'notFound') return undefined
    throw err
  })
  if (token === undefined) return inactive('TokenRevoked')
  // Its end, as a tk's (the verifier keeps its answer no longer): the earlier of its end of
  // life (expiresAt) and, rolled, its old string's end.
  const retiresAt = await ctx.tokens.retiresAt(token.id)
  const expiresAt = token.expiresAt === undefined ? undefined : Date.parse(token.expiresAt)
  const ends = Math.min(
    retiresAt ?? Number.POSITIVE_INFINITY,
    expiresAt ?? Number.POSITIVE_INFINITY,
  )
  return {
    active: true,
    scope: token.scopes.join(' '),
    username: account.username,
    token_type: 'Bearer',
    ...(ends === Number.POSITIVE_INFINITY ? {} : { exp: Math.floor(ends / 1000) }),
    iat: Math.floor(Date.parse(token.created) / 1000),
    client_id: token.client,
    id: token.id,
    usage: token.usage,
    allowedUrls: token.allowedUrls,
    ...(token.allowedIps === undefined ? {} : { allowedIps: token.allowedIps }),
    code: 'TokenValid',
  }
}

async function describeToken(ctx: AppContext, validation: Valid): Promise<Answer> {
  const { parsed } = validation
  if (parsed.usage !== 'tk') return permanent(ctx, validation)
  const { u, exp, iat, scopes, client } = parsed.payload
  const account = await current(ctx, u)
  if (account === undefined || iat < Math.floor(Date.parse(account.created) / 1000)) {
    return inactive('TokenRevoked')
  }
  return {
    active: true,
    scope: scopes.join(' '),
    username: u,
    token_type: 'Bearer',
    exp,
    iat,
    client_id: client,
    usage: 'tk',
    code: 'TokenValid',
  }
}

/** The answer to a validation: described, refused for its address, or charged its cost. */
async function introspect(
  ctx: AppContext,
  validation: Validation,
  { ip, cost = 1 }: Static<typeof IntrospectBody>,
  actor: Actor,
): Promise<Answer> {
  if (validation.code !== 'TokenValid') {
    // Not the account's that has its name now: a verifier counts it against nobody.
    const answer = inactive(validation.code)
    return 'unowned' in validation && validation.unowned ? { ...answer, unowned: true } : answer
  }
  // Valid, but not from where the caller's client is (Tessera's allowedIps).
  const within = validation.principal.allowedIps
  if (ip !== undefined && within !== undefined && !within(ip)) {
    return { active: false, code: 'TokenValid', reason: 'ip_not_allowed' }
  }
  const answer = await describeToken(ctx, validation)
  if (!answer.active || answer.username === undefined) return answer
  const spent = await ctx.credits.spend(answer.username, answer.id, cost, actor)
  if (spent === undefined) return answer
  if (!spent.ok) return { active: false, code: 'TokenValid', reason: 'credits_exhausted' }
  const { token, account } = spent
  return {
    ...answer,
    credits: {
      ...(token === undefined ? {} : { token }),
      ...(account === undefined ? {} : { account }),
    },
  }
}

/** The outcome an answer is counted as. */
const outcomeOf = (answer: Answer): number =>
  answer.active
    ? outcomeIndex.valid
    : answer.reason !== undefined
      ? outcomeIndex[answer.reason]
      : outcomeOfCode[answer.code as ValidationCode]

/** `POST /admin/v1/introspect`: a token string as RFC 7662 describes it, for operators only. */
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
      async (request) => {
        const body = request.body as Static<typeof IntrospectBody>
        const validation = await ctx.tokens.validate(body.token)
        ctx.metrics.validated(validation)
        const answer = await introspect(ctx, validation, body, operator(request))
        // A verifier asks with `count: false`: it reports each of its decisions itself.
        if (body.count !== false) ctx.usage.countValidation(validation, outcomeOf(answer))
        return answer
      },
    )
  })
}
