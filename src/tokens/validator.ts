import type { Db } from '../db/database.js'
import { type AccountRecord, type TokenRecord, tokensRepo } from '../db/repositories.js'
import { BoundedMap, type TokenCache } from './cache.js'
import { type ParsedToken, parseToken, signatureMatches } from './codec.js'
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

/** Accounts as validation reads them (AccountDirectory): cached when it may, else a read. */
export interface AccountLookup {
  find(username: string): AccountRecord | undefined | Promise<AccountRecord | undefined>
  peek(username: string): AccountRecord | undefined
}

export type Validation =
  | { code: 'TokenMalformed' }
  | { code: Exclude<ValidationCode, 'TokenMalformed' | 'TokenValid'>; parsed: ParsedToken }
  | { code: 'TokenValid'; parsed: ParsedToken; principal: Principal }

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

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly cache: TokenCache,
    private readonly now: () => number,
    private readonly accounts: AccountLookup,
  ) {}

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
      if (parsed.payload.exp * 1000 <= this.now()) return { code: 'TokenExpired', parsed }
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
    if (typeof a !== 'string' || !tokenIdPattern.test(a)) return { code: 'TokenRevoked', parsed }
    return this.load(a).then((record) => this.againstRecord(permanent, record))
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
  private temporaryOf(
    parsed: Extract<ParsedToken, { usage: 'tk' }>,
    account: AccountRecord | undefined,
  ): Validation {
    const { u, scopes, exp, iat } = parsed.payload
    if (account === undefined || account.disabled || iat < this.createdSecond(account)) {
      return { code: 'TokenRevoked', parsed }
    }
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
    return { code: 'TokenValid', parsed, principal }
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
      return { code: 'TokenRevoked', parsed }
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
    if (
      account === undefined ||
      account.disabled ||
      record.created < account.created ||
      (record.retiresAt !== undefined && record.retiresAt <= this.now())
    ) {
      return { code: 'TokenRevoked', parsed }
    }
    // Tessera's end of life of a pk or sk (expiresAt), epoch ms since the record was read.
    if (record.expiresAt != null && record.expiresAt <= this.now()) {
      return { code: 'TokenExpired', parsed }
    }
    return { code: 'TokenValid', parsed, principal: this.principalOf(record) }
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
      // A temporary token it makes ends no later than it does (expiresAfterAuthorizer): its end
      // of life, or, rolled, the end of its grace (a tk is never looked up, so nothing else
      // would end one made in the grace).
      const end = Math.min(record.expiresAt ?? Infinity, record.retiresAt ?? Infinity)
      if (end !== Infinity) principal.exp = Math.floor(end / 1000)
      if (record.retiresAt !== undefined) principal.retiring = true
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
