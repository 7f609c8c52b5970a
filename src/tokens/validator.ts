import type { Db } from '../db/database.js'
import { type AccountRecord, type TokenRecord, tokensRepo } from '../db/repositories.js'
import { BoundedMap, type TokenCache } from './cache.js'
import { type ParsedToken, parseToken, signatureMatches } from './codec.js'
import { type AccountLookup, type Gone, GoneTokens } from './gone.js'
import { tokenIdPattern } from './ids.js'
import type { Keyring } from './keyring.js'
import type { Principal } from './principal.js'
import { ipMatcher } from './rules.js'

export type ValidationCode =
  | 'TokenValid'
  | 'TokenMalformed'
  | 'TokenInvalid'
  | 'TokenExpired'
  | 'TokenRevoked'

export type { AccountLookup }

export type Validation =
  | { code: 'TokenMalformed' }
  | {
      code: Exclude<ValidationCode, 'TokenMalformed' | 'TokenValid'>
      parsed: ParsedToken
      /** Not made in the account that has its name now (if any): counted against nobody. */
      unowned?: true
    }
  | { code: 'TokenValid'; parsed: ParsedToken; principal: Principal; account: AccountRecord }

type Temporary = Extract<ParsedToken, { usage: 'tk' }>

const unowned = (code: 'TokenExpired' | 'TokenRevoked', parsed: ParsedToken): Validation => ({
  code,
  parsed,
  unowned: true,
})

/**
 * The hot path: every request of every API behind Tessera validates a token. Verified strings,
 * token records (see TokenCache) and principals are kept, so that a repeat validation costs a
 * few map lookups and no query.
 */
export class TokenValidator {
  /**
   * Verified strings, by their last 16 characters (the end of the signature): a fresh string's
   * hash costs a pass over it, and a token is about 200 characters. A hit counts only when the
   * whole string is the same.
   */
  private readonly verified = new BoundedMap<{ token: string; parsed: ParsedToken }>(50_000)
  /** One Principal per cached record or verified temporary token. */
  private readonly principals = new WeakMap<TokenRecord | ParsedToken, Principal>()
  private readonly createdSeconds = new WeakMap<AccountRecord, number>()
  /** Signed pk/sk ids with no record, and whose each was. */
  private readonly gone: GoneTokens
  /** Expired temporary tokens not made in the account that has their name now (unowned). */
  private readonly strangers = new WeakSet<ParsedToken>()

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly cache: TokenCache,
    private readonly now: () => number,
    private readonly accounts: AccountLookup,
  ) {
    this.gone = new GoneTokens(db, accounts)
  }

  /** A token record from the database, kept in the cache unless it changed meanwhile. */
  private async load(id: string): Promise<TokenRecord | undefined> {
    const readAt = this.cache.generation
    const record = await tokensRepo.find(this.db, id)
    if (record !== undefined) this.cache.set(record, readAt)
    return record
  }

  /**
   * Parses, verifies and looks up a token string: the five codes of retrieve. Answers without a
   * promise when nothing needs the database (malformed, bad signature, temporary, cached).
   */
  validate(token: string): Validation | Promise<Validation> {
    // Keys are only ever added, so a string whose signature verified once always will.
    const tail = token.length > 16 ? token.slice(-16) : token
    const seen = this.verified.get(tail)
    let parsed = seen !== undefined && seen.token === token ? seen.parsed : undefined
    if (parsed === undefined) {
      parsed = parseToken(token)
      if (parsed === undefined) return { code: 'TokenMalformed' }
      if (!this.verify(parsed)) return { code: 'TokenInvalid', parsed }
      this.verified.set(tail, { token, parsed })
    }
    if (parsed.usage === 'tk') {
      if (parsed.payload.exp * 1000 <= this.now()) return this.expired(parsed)
      const temporary = parsed
      const account = this.accounts.find(parsed.payload.u)
      return account instanceof Promise
        ? account.then((a) => this.temporaryOf(temporary, a))
        : this.temporaryOf(temporary, account)
    }
    const permanent = parsed
    const { a } = permanent.payload
    // The cache holds records by their ids alone: a hit needs no check of the id's shape.
    const cached = typeof a === 'string' ? this.cache.get(a) : undefined
    if (cached !== undefined) return this.againstRecord(permanent, cached)
    if (typeof a !== 'string' || !tokenIdPattern.test(a)) return unowned('TokenRevoked', parsed)
    const gone = this.gone.get(a)
    if (gone !== undefined) return this.ofGone(permanent, a, gone)
    return this.load(a).then(async (record) =>
      record === undefined
        ? this.ofGone(permanent, a, await this.gone.load(a))
        : this.againstRecord(permanent, record),
    )
  }

  /**
   * Whether a refusal of pk/sk `id` named `username` (a verifier's report says so) is counted
   * against the account that has that name now: validate's rule, without the string. The id is
   * that account's record, or was deleted from it (gone_tokens) and the account is the one it
   * was made in; anything else is nobody's. From the caches when it can (record, `gone`), so a
   * repeat costs no query; the record cache's lookups are not counted (not a validation).
   */
  async owns(username: string, id: string): Promise<boolean> {
    let record = this.cache.peek(id)
    let gone = record === undefined ? this.gone.get(id) : undefined
    if (record === undefined && gone === undefined) {
      record = await this.load(id)
      if (record === undefined) gone = await this.gone.load(id)
    }
    if (record !== undefined) {
      if (record.username !== username) return false
      const account = await this.accounts.find(username)
      return account !== undefined && record.created >= account.created
    }
    return this.gone.owned(id, gone ?? null, username)
  }

  /** A deleted pk/sk: revoked, counted against nobody unless its account's (GoneTokens.owned). */
  private ofGone(parsed: ParsedToken, id: string, gone: Gone): Validation | Promise<Validation> {
    const revoked = (owned: boolean): Validation =>
      owned ? { code: 'TokenRevoked', parsed } : unowned('TokenRevoked', parsed)
    const owned = this.gone.owned(id, gone, parsed.payload.u)
    return owned instanceof Promise ? owned.then(revoked) : revoked(owned)
  }

  /**
   * A validly signed tk past its end: expired, counted against its account while the account
   * that has its name is the one that issued it (see temporaryOf), else against nobody.
   */
  private expired(parsed: Temporary): Validation | Promise<Validation> {
    if (this.strangers.has(parsed)) return unowned('TokenExpired', parsed)
    const account = this.accounts.find(parsed.payload.u)
    return account instanceof Promise
      ? account.then((a) => this.expiredOf(parsed, a))
      : this.expiredOf(parsed, account)
  }

  private expiredOf(parsed: Temporary, account: AccountRecord | undefined): Validation {
    if (account !== undefined && parsed.payload.iat >= this.createdSecond(account)) {
      return { code: 'TokenExpired', parsed }
    }
    // No account has its name, or a later one: the one that issued it never will again.
    this.strangers.add(parsed)
    return unowned('TokenExpired', parsed)
  }

  /**
   * What `validate` would answer for a valid pk or sk now, without counting the cache's lookups
   * and without waiting: for a fast path deciding whether to take a
   * request, which validates it once it does. Undefined when `validate` would have to verify
   * the string (not seen yet) or read the database, for a tk, and for a token not valid.
   */
  peek(token: string): Validation | undefined {
    const seen = this.verified.get(token.length > 16 ? token.slice(-16) : token)
    if (seen === undefined || seen.token !== token || seen.parsed.usage === 'tk') return undefined
    const { parsed } = seen
    const { a } = parsed.payload
    const record = typeof a === 'string' ? this.cache.peek(a) : undefined
    if (
      record === undefined ||
      record.username !== parsed.payload.u ||
      record.usage !== parsed.usage
    ) {
      return undefined
    }
    const account = this.accounts.peek(record.username)
    const validation = account && this.ofAccount(parsed, record, account)
    return validation?.code === 'TokenValid' ? validation : undefined
  }

  /**
   * A validly signed tk: valid while its account exists, is enabled, and is the account that
   * issued it (not a later one of the same name: issued before the account was created).
   */
  private temporaryOf(parsed: Temporary, account: AccountRecord | undefined): Validation {
    const { u, scopes, exp, iat } = parsed.payload
    if (account === undefined || iat < this.createdSecond(account)) {
      return unowned('TokenRevoked', parsed)
    }
    if (account.disabled) return { code: 'TokenRevoked', parsed }
    let principal = this.principals.get(parsed)
    if (principal === undefined) {
      principal = {
        usage: 'tk',
        username: u,
        scopes: new Set(scopes),
        exp,
        rateKey: `user:${u}`,
        meterKey: `${u} `,
      }
      this.principals.set(parsed, principal)
    }
    return { code: 'TokenValid', parsed, principal, account }
  }

  /** A validly signed pk/sk: valid while its record exists, for that user and usage. */
  private againstRecord(
    parsed: ParsedToken,
    record: TokenRecord | undefined,
  ): Validation | Promise<Validation> {
    if (
      record === undefined ||
      record.username !== parsed.payload.u ||
      record.usage !== parsed.usage
    ) {
      return unowned('TokenRevoked', parsed)
    }
    const account = this.accounts.find(record.username)
    return account instanceof Promise
      ? account.then((a) => this.ofAccount(parsed, record, a))
      : this.ofAccount(parsed, record, account)
  }

  /** ... and while its account exists, is enabled, and is the one the token was made in. */
  private ofAccount(
    parsed: ParsedToken,
    record: TokenRecord,
    account: AccountRecord | undefined,
  ): Validation {
    // Not made in the account that has its name now: counted against nobody.
    if (account === undefined || record.created < account.created) {
      return unowned('TokenRevoked', parsed)
    }
    if (account.disabled || (record.retiresAt !== undefined && record.retiresAt <= this.now())) {
      return { code: 'TokenRevoked', parsed }
    }
    // Tessera's end of life of a pk or sk (expiresAt), epoch ms since the record was read.
    if (record.expiresAt != null && record.expiresAt <= this.now()) {
      return { code: 'TokenExpired', parsed }
    }
    return { code: 'TokenValid', parsed, principal: this.principalOf(record), account }
  }

  /** The second an account was created; parsed once per record (Date.parse costs ~350 ns). */
  private createdSecond(account: AccountRecord): number {
    let second = this.createdSeconds.get(account)
    if (second === undefined) {
      second = Math.floor(Date.parse(account.created) / 1000)
      this.createdSeconds.set(account, second)
    }
    return second
  }

  private principalOf(record: TokenRecord): Principal {
    let principal = this.principals.get(record)
    if (principal === undefined) {
      const { usage, username, scopes, id, allowedIps } = record
      principal = {
        usage,
        username,
        scopes: new Set(scopes),
        tokenId: id,
        rateKey: `user:${username}`,
        meterKey: `${username} ${id}`,
      }
      if (allowedIps != null) principal.allowedIps = ipMatcher(allowedIps)
      if (record.ratelimits != null) principal.limits = record.ratelimits
      if (record.parent !== undefined) principal.child = true
      // A temporary token it makes ends no later than it does (expiresAfterAuthorizer): its end
      // of life, or, rolled, the end of its grace (a tk is never looked up, so nothing else
      // would end one made in the grace).
      const end = Math.min(record.expiresAt ?? Infinity, record.retiresAt ?? Infinity)
      if (end !== Infinity) principal.exp = Math.floor(end / 1000)
      if (record.retiresAt !== undefined) principal.retiresAt = record.retiresAt
      this.principals.set(record, principal)
    }
    return principal
  }

  private verify(parsed: ParsedToken): boolean {
    for (const key of this.keyring.newestFirst)
      if (signatureMatches(parsed, key.secret)) return true
    // A key added by `tessera keys rotate` in another process: look once more.
    if (this.keyring.refresh()) return this.verify(parsed)
    return false
  }
}
