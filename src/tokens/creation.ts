import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { Batcher, type GroupCommitStats } from '../db/batcher.js'
import { insertDepth, insertWithEvents } from '../db/creates.js'
import { type AccountRecord, tokensRepo } from '../db/repositories.js'
import { type TokenRecord, tokenDocument, withToken } from '../db/token-document.js'
import { fail } from '../errors.js'
import type { NamedLimit } from '../ratelimit/named.js'
import { isoTime, parseTimestamp } from '../time.js'
import { encodeToken } from './codec.js'
import { holdNew, policyOf } from './policy.js'
import type { Principal } from './principal.js'
import type { TokenRecords } from './records.js'
import {
  creationRefusal,
  normalizeAllowedIps,
  normalizeAllowedUrls,
  normalizeExpiresAt,
  normalizeRatelimits,
} from './rules.js'

/** The fields a client sets on create and update. */
export interface TokenFields {
  note?: string
  scopes?: string[]
  allowedUrls?: string[] | null
  /** Tessera: IP ranges the token may be used from. */
  allowedIps?: string[] | null
  /** Tessera: the token's end of life, ISO 8601; null (update) removes it. */
  expiresAt?: string | null
  /** Tessera: its own named rate limits (see normalizeRatelimits); null or [] removes them. */
  ratelimits?: readonly NamedLimit[] | null
}

export interface TemporaryInput {
  expires: string
  scopes?: string[]
  allowedUrls?: unknown
  allowedIps?: unknown
  expiresAt?: unknown
  ratelimits?: unknown
}

export interface TemporaryResult {
  token: string
  issued_at: string
  expires: string
  expires_in: number
}

const hourMs = 3_600_000

/**
 * The authorizing pk/sk as its stored record has it now. The validator's principal comes from
 * this instance's cache, which learns of a roll made elsewhere (another instance or worker)
 * only when the change feed's notice arrives: until then the old string would pass for a token
 * that is not retiring, and could make a permanent token, or a temporary one with
 * tokens:write or past the grace. A create reads the caller's row once (by its key; creates
 * are not the verification hot path), as update, roll and delete do (refuseRetiring). A tk
 * names no stored token: it is taken as it is.
 */
export async function currentPrincipal(
  records: TokenRecords,
  principal: Principal,
): Promise<Principal> {
  if (principal.tokenId === undefined) return principal
  const record = await tokensRepo.find(records.db, principal.tokenId)
  // Deleted, or past its grace (and perhaps swept) since this instance cached it: as the
  // validator answers such a string once it knows.
  if (
    record === undefined ||
    (record.retiresAt !== undefined && record.retiresAt <= records.now())
  ) {
    return fail('unauthorized')
  }
  if (record.retiresAt === principal.retiresAt) return principal
  // The end of what it makes (expiresAfterAuthorizer), as principalOf sets it from the record.
  const end = Math.min(record.expiresAt ?? Infinity, record.retiresAt ?? Infinity)
  const exp = Math.min(principal.exp ?? Infinity, Math.floor(end / 1000))
  return {
    ...principal,
    ...(exp === Infinity ? {} : { exp }),
    ...(record.retiresAt === undefined ? {} : { retiresAt: record.retiresAt }),
  }
}

/** Creates of permanent and temporary tokens, written in groups (see Batcher). */
export class TokenCreation {
  /** Group commit of new tokens, each with its audit event, atomically (see insertWithEvents). */
  private readonly inserts: Batcher<{ record: TokenRecord; event: AuditEvent; document: string }>
  /** Temporary tokens are not stored: only their audit events, written in groups as well. */
  private readonly issued: Batcher<AuditEvent>

  constructor(
    private readonly records: TokenRecords,
    groupCommits?: GroupCommitStats,
  ) {
    const { db } = records
    const write = (items: { record: TokenRecord; event: AuditEvent; document: string }[]) =>
      insertWithEvents(
        db,
        items.map((i) => i.record),
        items.map((i) => i.event),
        items.map((i) => i.document),
      )
    this.inserts = new Batcher(write, 500, insertDepth(db), groupCommits)
    this.issued = new Batcher(
      (events) => insertWithEvents(db, [], events),
      500,
      insertDepth(db),
      groupCommits,
    )
  }

  /** A new permanent token, stored with its audit event; also its document, written once. */
  async insert(
    account: AccountRecord,
    principal: Principal,
    input: TokenFields,
    actor: Actor,
  ): Promise<{ record: TokenRecord; document: string }> {
    const refused = creationRefusal(principal, false)
    if (refused !== undefined) throw refused
    principal = await currentPrincipal(this.records, principal)
    const again = creationRefusal(principal, false)
    if (again !== undefined) throw again
    const allowedUrls = normalizeAllowedUrls(input.allowedUrls)
    const allowedIps = normalizeAllowedIps(input.allowedIps)
    const expiresAt = normalizeExpiresAt(input.expiresAt, this.records.now())
    const ratelimits = normalizeRatelimits(input.ratelimits)
    const scopes = this.records.checkScopes(account, principal, input.scopes ?? [])
    const note = input.note ?? ''
    const fields = { note, scopes, allowedUrls, allowedIps, expiresAt, ratelimits }
    const record = this.records.newRecord(account, fields)
    holdNew(policyOf(this.records.catalog, account), record, this.records.now())
    const target = { type: 'token' as const, id: record.id }
    const details = { usage: record.usage, scopes }
    const event = auditEvent(
      this.records.now(),
      'token.created',
      actor,
      target,
      account.username,
      details,
    )
    const document = tokenDocument(record)
    await this.inserts.add({ record, event, document })
    return { record, document }
  }

  /** Create's answer as JSON text: the stored document with the token string added. */
  async insertJson(
    account: AccountRecord,
    principal: Principal,
    input: TokenFields,
    actor: Actor,
  ): Promise<string> {
    const { record, document } = await this.insert(account, principal, input, actor)
    const token = this.records.tokenString(record)
    // The answer's schema requires it: its key cannot be gone unless the key file was replaced.
    if (token === undefined) throw new Error(`no signing key ${record.keyId} for a new token`)
    return withToken(document, token)
  }

  async temporary(
    account: AccountRecord,
    principal: Principal,
    input: TemporaryInput,
    actor: Actor,
  ): Promise<TemporaryResult> {
    const refused = creationRefusal(principal, true)
    if (refused !== undefined) throw refused
    principal = await currentPrincipal(this.records, principal)
    if (input.allowedUrls !== undefined) {
      fail('invalidResources', 'temporary tokens cannot have allowedUrls')
    }
    if (input.allowedIps !== undefined) {
      fail('invalidResources', 'temporary tokens cannot have allowedIps')
    }
    if (input.expiresAt !== undefined) {
      fail('invalidResources', 'a body with expires makes a temporary token: omit expiresAt')
    }
    // Nothing is stored of a temporary token: its account's limits are the ones that hold.
    if (input.ratelimits !== undefined) {
      fail('invalidResources', 'temporary tokens cannot have ratelimits')
    }
    const expiresMs = parseTimestamp(input.expires)
    if (expiresMs === undefined)
      return fail('invalidResources', 'expires must be an ISO 8601 timestamp')
    const now = this.records.now()
    if (expiresMs < now) fail('expiresInPast')
    if (expiresMs > now + hourMs) fail('expiresTooFar')
    const exp = Math.floor(expiresMs / 1000)
    if (principal.exp !== undefined && exp > principal.exp) fail('expiresAfterAuthorizer')
    const scopes = this.records.checkScopes(account, principal, input.scopes ?? [])
    // A tk names no token that made it: one with tokens:write made by a rolled string would
    // change the tokens that replaced it, which that string itself may not (refuseRetiring).
    if (principal.retiresAt !== undefined && scopes.includes('tokens:write')) {
      fail('invalidScopes', 'a rolled token cannot give tokens:write to a temporary token')
    }
    const iat = Math.floor(now / 1000)
    const payload = { u: account.username, exp, iat, scopes, client: 'api' as const }
    // Its string is never recorded: what it may do and until when.
    const details = { scopes, expires: isoTime(exp * 1000) }
    const at = this.records.now()
    await this.issued.add(
      auditEvent(at, 'token.temporary_issued', actor, { type: 'token' }, account.username, details),
    )
    return {
      token: encodeToken('tk', payload, this.records.keyring.current.secret),
      issued_at: isoTime(iat * 1000),
      expires: isoTime(exp * 1000),
      expires_in: exp - iat,
    }
  }
}
