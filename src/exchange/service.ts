import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { exchangeRepo } from '../db/exchange.js'
import type { AccountRecord } from '../db/repositories.js'
import { fail } from '../errors.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { isoTime } from '../time.js'
import { encodeToken } from '../tokens/codec.js'
import type { Keyring } from '../tokens/keyring.js'
import {
  accessTokenType,
  type ExchangeAnswer,
  leewaySeconds,
  maxIdentityLifeSeconds,
  Refusal,
  readForm,
  untrusted,
} from './form.js'
import { type IssuerKeys, IssuerUnavailable } from './issuer-keys.js'
import { type DecodedJwt, decodeJwt, signatureHolds, timeRefusal } from './jwt.js'
import { admitting, readTrustPolicies, type TrustPolicy } from './policies.js'

export { accessTokenType, grantType, jwtType } from './form.js'

export interface ExchangeDeps {
  db: Db
  keyring: Keyring
  catalog: ScopeCatalog
  keys: IssuerKeys
  now: () => number
  /** The account, when it exists and is not disabled. */
  account(username: string): Promise<AccountRecord | undefined>
  /** Counts an exchange by outcome (/metrics). */
  count?(outcome: string): void
  /** Charges an exchange to the account's budget: the seconds to wait when it is spent. */
  limit?(username: string): Promise<number | undefined>
}

/**
 * Workload identity exchange (docs/machines.md): a signed identity token from a CI system or a
 * cloud, checked against the account's trust policies, for a temporary token (tk) of at most an
 * hour. No secret is stored anywhere: the identity's issuer vouches for the workload, and the
 * account's owner says which workloads it trusts with what.
 */
export class ExchangeService {
  constructor(private readonly deps: ExchangeDeps) {}

  /** The scopes an account may hold, which its policies may name. */
  private known(account: AccountRecord): Set<string> {
    return new Set(this.deps.catalog.availableTo(account.plan, account.features).map((s) => s.id))
  }

  /** The account's trust policies; undefined when there is no such account. */
  async policies(username: string): Promise<TrustPolicy[] | undefined> {
    const json = await exchangeRepo.policies(this.deps.db, username)
    if (json === undefined) return undefined
    return json === null ? [] : (JSON.parse(json) as TrustPolicy[])
  }

  /** Replaces the account's trust policies (422 with the sentence of what is wrong), audited. */
  async setPolicies(account: AccountRecord, input: unknown, actor: Actor): Promise<TrustPolicy[]> {
    return (await this.changePolicies(account, () => input, actor)) as TrustPolicy[]
  }

  /**
   * Changes the account's trust policies from what they are now, read under a lock (the
   * account's row, held until the commit): two owners adding at once both get theirs. `change`
   * answers the new list, or undefined to write nothing (then so does this).
   */
  async changePolicies(
    account: AccountRecord,
    change: (current: TrustPolicy[]) => unknown,
    actor: Actor,
  ): Promise<TrustPolicy[] | undefined> {
    const known = this.known(account)
    return this.deps.db.transaction().execute(async (trx) => {
      const json = await exchangeRepo.policies(trx, account.username, true)
      const input = change(json == null ? [] : (JSON.parse(json) as TrustPolicy[]))
      if (input === undefined) return undefined
      const policies = readTrustPolicies(input, known)
      if (typeof policies === 'string') return fail('invalidResources', policies)
      const text = policies.length === 0 ? null : JSON.stringify(policies)
      await exchangeRepo.setPolicies(trx, account.username, text)
      const issuers = [...new Set(policies.map((p) => p.issuer))]
      const details = { issuers, count: policies.length }
      const target = { type: 'account' as const, id: account.username }
      const now = this.deps.now()
      const event = auditEvent(
        now,
        'trust_policies.changed',
        actor,
        target,
        account.username,
        details,
      )
      await auditRepo.insert(trx, event)
      return policies
    })
  }

  /**
   * RFC 8693's exchange of `form` (its fields as sent) for a tk of `username`. Every answer but a
   * malformed request is audited in the account (when it exists), with the issuer and subject.
   */
  async exchange(
    username: string,
    form: Record<string, string>,
    actor: Actor,
  ): Promise<ExchangeAnswer> {
    let account: AccountRecord | undefined
    try {
      // The form first: a malformed request is told so whether the account exists or not.
      const asked = readForm(form)
      account = await this.deps.account(username)
      if (account === undefined) {
        throw new Refusal('invalid_grant', 'no such account', {}, untrusted)
      }
      const answer = await this.grant(account, asked, actor)
      this.deps.count?.(answer.status === 200 ? 'issued' : 'limited')
      return answer
    } catch (err) {
      if (!(err instanceof Refusal)) throw err
      this.deps.count?.(err.error)
      if (account !== undefined && err.error !== 'invalid_request') {
        await this.audit(account, 'token.exchange_refused', actor, {
          ...err.audited,
          error: err.error,
          reason: err.description,
        })
      }
      const status = err.error === 'temporarily_unavailable' ? 503 : 400
      return { status, body: { error: err.error, error_description: err.shown } }
    }
  }

  private async grant(
    account: AccountRecord,
    asked: ReturnType<typeof readForm>,
    actor: Actor,
  ): Promise<ExchangeAnswer> {
    const jwt = decodeJwt(asked.subjectToken)
    if (typeof jwt === 'string') throw new Refusal('invalid_grant', jwt)
    const iss = jwt.claims.iss
    const seen = { issuer: typeof iss === 'string' ? iss : null, subject: subjectOf(jwt) }
    const policies = ((await this.policies(account.username)) ?? []).filter((p) => p.issuer === iss)
    if (typeof iss !== 'string' || policies.length === 0) {
      throw new Refusal(
        'invalid_grant',
        "no trust policy of this account names the token's issuer",
        seen,
        untrusted,
      )
    }
    await this.verify(jwt, iss, seen)
    // Only now, the identity proven, is the account's own budget charged: a stranger's junk
    // cannot use it up (the route limits requests per client address first).
    const wait = await this.deps.limit?.(account.username)
    if (wait !== undefined) {
      const error_description = `too many exchanges for this account: try again in ${wait} s`
      return {
        status: 429,
        retryAfter: wait,
        body: { error: 'temporarily_unavailable', error_description },
      }
    }
    const [policy, index] = admitting(policies, jwt.claims, seen)
    const scopes = this.scopesOf(account, policy, asked.scope, seen)
    await this.useOnce(jwt, iss, seen)
    const now = this.deps.now()
    const iat = Math.floor(now / 1000)
    const exp = iat + policy.maxTtl
    const payload = { u: account.username, exp, iat, scopes, client: 'api' as const }
    const token = encodeToken('tk', payload, this.deps.keyring.current.secret)
    await this.audit(account, 'token.exchanged', actor, {
      ...seen,
      policy: index,
      scopes,
      expires: isoTime(exp * 1000),
    })
    return {
      status: 200,
      body: {
        access_token: token,
        issued_token_type: accessTokenType,
        token_type: 'Bearer',
        expires_in: exp - iat,
        scope: scopes.join(' '),
      },
    }
  }

  /** The signature under the issuer's key for the token's kid, and its times. */
  private async verify(jwt: DecodedJwt, iss: string, seen: Record<string, unknown>) {
    let key: Awaited<ReturnType<IssuerKeys['key']>>
    try {
      key = await this.deps.keys.key(iss, jwt.kid, jwt.alg)
    } catch (err) {
      if (!(err instanceof IssuerUnavailable)) throw err
      // Why, for the account's audit log: the issuer and the reason, never a key or token.
      throw new Refusal(
        'temporarily_unavailable',
        "the issuer's keys cannot be fetched now: try again later",
        { ...seen, cause: err.message },
      )
    }
    if (key === undefined) {
      throw new Refusal(
        'invalid_grant',
        "no key of the issuer matches the token's kid and alg",
        seen,
        untrusted,
      )
    }
    if (!signatureHolds(jwt, key)) {
      throw new Refusal('invalid_grant', "the token's signature does not hold", seen, untrusted)
    }
    const late = timeRefusal(jwt.claims, this.deps.now(), leewaySeconds)
    if (late !== undefined) throw new Refusal('invalid_grant', late, seen)
    // Its jti is kept until its end: an identity living longer than a day is refused.
    const exp = jwt.claims.exp as number
    if (exp > this.deps.now() / 1000 + maxIdentityLifeSeconds) {
      throw new Refusal('invalid_grant', 'the token lives longer than a day', seen)
    }
  }

  /** The policy's scopes, narrowed to those asked (RFC 6749 `scope`, space-separated). */
  private scopesOf(
    account: AccountRecord,
    policy: TrustPolicy,
    scope: string | undefined,
    seen: Record<string, unknown>,
  ) {
    // Scopes the plan no longer gives are dropped, as a token's are.
    const known = this.known(account)
    const held = policy.scopes.filter((s) => known.has(s))
    if (scope === undefined) return held
    const asked = scope.split(' ').filter((s) => s !== '')
    const outside = asked.find((s) => !held.includes(s))
    if (outside !== undefined || asked.length === 0) {
      throw new Refusal(
        'invalid_scope',
        `the trust policy does not give ${outside ?? 'an empty scope'}`,
        seen,
      )
    }
    return [...new Set(asked)]
  }

  /** A `jti` is exchanged once, on whichever instance: recorded until the token's end. */
  private async useOnce(jwt: DecodedJwt, iss: string, seen: Record<string, unknown>) {
    const jti = jwt.claims.jti
    if (typeof jti !== 'string' || jti === '' || jti.length > 256) {
      throw new Refusal('invalid_grant', 'the token has no jti: it could be replayed', seen)
    }
    const until = isoTime(((jwt.claims.exp as number) + leewaySeconds) * 1000)
    if (!(await exchangeRepo.useJti(this.deps.db, iss, jti, until))) {
      throw new Refusal('invalid_grant', 'the token was exchanged already (its jti was seen)', seen)
    }
  }

  private async audit(
    account: AccountRecord,
    action: AuditEvent['action'],
    actor: Actor,
    details: Record<string, unknown>,
  ) {
    const target = { type: 'account' as const, id: account.username }
    await auditRepo.insert(
      this.deps.db,
      auditEvent(this.deps.now(), action, actor, target, account.username, details),
    )
  }

  /** Forgets used `jti`s whose tokens have ended. */
  pruneJtis(): Promise<number> {
    return exchangeRepo.pruneJtis(this.deps.db, isoTime(this.deps.now()))
  }
}

const subjectOf = (jwt: DecodedJwt) =>
  typeof jwt.claims.sub === 'string' ? jwt.claims.sub.slice(0, 256) : null
