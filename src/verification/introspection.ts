import type { AccountService } from '../accounts/service.js'
import type { Actor } from '../audit/events.js'
import { ApiError } from '../errors.js'
import type { RateLimiter } from '../ratelimit/limiter.js'
import type { TokenService } from '../tokens/service.js'
import type { Validation, ValidationCode } from '../tokens/validator.js'
import { outcomeOfCode } from '../usage/attribution.js'
import type { CreditService } from '../usage/credits.js'
import { outcomeIndex } from '../usage/outcomes.js'
import {
  type Checkpoint,
  type LimitState,
  statesOf,
  type Valid,
  type Verdict,
} from './checkpoint.js'
import { peekLimits } from './leases.js'
import type { Gate } from './limits.js'
import type { RequestFacts } from './log.js'

/** One limit in an answer: what is left of its window, and when the window ends (epoch ms). */
export interface LimitShown {
  name: string
  limit: number
  remaining: number
  reset: number
}

/** RFC 7662's answer, Tessera's way (src/http/admin/introspect-schemas.ts says each field). */
export interface IntrospectionAnswer {
  active: boolean
  code: string
  scope?: string
  username?: string
  token_type?: 'Bearer'
  exp?: number
  iat?: number
  client_id?: string
  id?: string
  usage?: 'pk' | 'sk' | 'tk'
  allowedUrls?: string[]
  allowedIps?: string[]
  unowned?: true
  reason?: 'ip_not_allowed' | 'credits_exhausted' | 'rate_limited'
  ratelimit?: string
  ratelimits?: LimitShown[]
  credits?: { token?: number; account?: number }
}

/** What is asked: the token, the caller's client address, the credits it costs, and counting. */
export interface IntrospectionAsk {
  token: string
  ip?: string
  cost?: number
  count?: boolean
}

/** What an introspection reads, counts and spends: the application's context has it all. */
export interface IntrospectionDeps {
  tokens: TokenService
  accounts: AccountService
  credits: CreditService
  checkpoint: Checkpoint
  rateLimiter: RateLimiter
  metrics: { validated(validation: Validation): void }
}

const inactive = (code: Validation['code']): IntrospectionAnswer => ({ active: false, code })

/**
 * `POST /admin/v1/introspect`: a token string as RFC 7662 describes it, with Tessera's rules
 * (its route's description says them all). Counted once in the usage by its outcome, unless
 * `count` is false (a verifier, which reports its own decisions and takes its passes from
 * rate-limit leases: its limits are then read, never consumed).
 */
export async function introspect(
  deps: IntrospectionDeps,
  ask: IntrospectionAsk,
  actor: Actor,
  facts?: RequestFacts,
): Promise<IntrospectionAnswer> {
  const validation = await deps.tokens.validate(ask.token)
  deps.metrics.validated(validation)
  const answer = await decide(deps, validation, ask, actor)
  if (ask.count !== false) {
    const { checkpoint } = deps
    if (answer.ratelimit !== undefined) {
      checkpoint.countLimited(validation, answer.ratelimit, facts)
    } else checkpoint.count(validation, outcomeOf(answer), facts)
  }
  return answer
}

/** The outcome an answer is counted as. */
export const outcomeOf = (answer: IntrospectionAnswer): number =>
  answer.active
    ? outcomeIndex.valid
    : answer.reason !== undefined
      ? outcomeIndex[answer.reason]
      : outcomeOfCode[answer.code as ValidationCode]

/** The answer to a validation: described, refused for its address or a limit, or charged. */
async function decide(
  deps: IntrospectionDeps,
  validation: Validation,
  { ip, cost = 1, count }: IntrospectionAsk,
  actor: Actor,
): Promise<IntrospectionAnswer> {
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
  const answer = await describeToken(deps, validation)
  if (!answer.active || answer.username === undefined) return answer
  const gate = deps.checkpoint.book.gateOf(validation.principal, validation.account)
  if (count === false) {
    // A verifier's: read, not consumed (its passes come from leases).
    if (!shown(deps, gate)) return spend(deps, answer, undefined, cost, actor)
    const states = await peekLimits(deps.rateLimiter, gate.list, deps.tokens.now())
    return spend(deps, { ...answer, ratelimits: states.map(show) }, undefined, cost, actor)
  }
  // The limits before the credits: a refused request spends nothing.
  const verdict = await deps.checkpoint.limits(validation)
  const ratelimits = statesOf(verdict).map(show)
  if (!verdict.allowed) {
    const ratelimit = verdict.applied.rule.name
    return { active: false, code: 'TokenValid', reason: 'rate_limited', ratelimit, ratelimits }
  }
  return spend(deps, shown(deps, gate) ? { ...answer, ratelimits } : answer, verdict, cost, actor)
}

/**
 * Whether an active answer lists its limits: when any applies beyond the service's own
 * `requests` (RATE_LIMIT_PER_MINUTE), that is when a plan, the account or the token sets one.
 * With none, introspection answers as before named limits (and a verifier leases nothing).
 */
const shown = (deps: IntrospectionDeps, gate: Gate): boolean =>
  gate.list.length > 1 || gate.requests.rule !== deps.checkpoint.book.requests

const show = ({ applied, result }: LimitState): LimitShown => ({
  name: applied.rule.name,
  limit: result.limit,
  remaining: result.remaining,
  reset: result.reset,
})

/** Charges an active answer its cost; short, the limits it took go back (`verdict`). */
async function spend(
  deps: IntrospectionDeps,
  answer: IntrospectionAnswer,
  verdict: Verdict | undefined,
  cost: number,
  actor: Actor,
): Promise<IntrospectionAnswer> {
  const spent = await deps.credits.spend(answer.username as string, answer.id, cost, actor)
  if (spent === undefined) return answer
  if (!spent.ok) {
    // One refused request consumes none: the next still has its count.
    if (verdict !== undefined) deps.checkpoint.release(verdict)
    return { active: false, code: 'TokenValid', reason: 'credits_exhausted' }
  }
  const { token, account } = spent
  return {
    ...answer,
    credits: {
      ...(token === undefined ? {} : { token }),
      ...(account === undefined ? {} : { account }),
    },
  }
}

/**
 * The account as the database says it now, when it is there and enabled. The validator reads
 * the instance's account cache, which may lag another instance's change by up to a second; a
 * verifier caches this answer, so it must not describe a token that is no longer good.
 */
async function current(deps: IntrospectionDeps, username: string) {
  const account = await deps.accounts.get(username).catch((err: unknown) => {
    if (err instanceof ApiError && err.kind === 'noSuchUser') return undefined
    throw err
  })
  return account?.disabled === false ? account : undefined
}

/** A valid pk or sk as its record says it now; revoked if it went since it was validated. */
async function permanent(deps: IntrospectionDeps, validation: Valid): Promise<IntrospectionAnswer> {
  const { principal } = validation
  const account = await current(deps, principal.username)
  if (account === undefined || principal.tokenId === undefined) return inactive('TokenRevoked')
  const token = await deps.tokens.get(account, principal.tokenId).catch((err: unknown) => {
    if (err instanceof ApiError && err.kind === 'notFound') return undefined
    throw err
  })
  if (token === undefined) return inactive('TokenRevoked')
  // Its end, as a tk's (the verifier keeps its answer no longer): the earlier of its end of
  // life (expiresAt) and, rolled, its old string's end.
  const retiresAt = await deps.tokens.retiresAt(token.id)
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

async function describeToken(
  deps: IntrospectionDeps,
  validation: Valid,
): Promise<IntrospectionAnswer> {
  const { parsed } = validation
  if (parsed.usage !== 'tk') return permanent(deps, validation)
  const { u, exp, iat, scopes, client } = parsed.payload
  const account = await current(deps, u)
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
