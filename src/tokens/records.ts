import type { AuditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { TokenChanges } from '../db/changes.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, tokensRepo } from '../db/repositories.js'
import { type TokenRecord, type TokenView, tokenView } from '../db/token-document.js'
import { fail } from '../errors.js'
import type { NamedLimit } from '../ratelimit/named.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { isoTime } from '../time.js'
import type { TokenCache } from './cache.js'
import { encodeToken } from './codec.js'
import { ancestorsOf } from './family.js'
import { newTokenId, tokenIdPattern } from './ids.js'
import type { Keyring } from './keyring.js'
import type { Principal } from './principal.js'
import { checkScopes, retiringSince } from './rules.js'

/** The fields of a new permanent token that its creator chooses. */
export interface NewTokenFields {
  note: string
  scopes: string[]
  allowedUrls: string[] | null
  allowedIps?: string[] | null
  /** Tessera: its end of life, epoch ms. */
  expiresAt?: number | null
  /** Tessera: its own named rate limits, as normalizeRatelimits read them. */
  ratelimits?: NamedLimit[] | null
  isDefault?: boolean
}

/**
 * The stored tokens as every operation of the service sees them: read for a change, shown on the
 * wire with their derived strings, changed with an audit event and a notice to every instance.
 */
export class TokenRecords {
  constructor(
    readonly db: Db,
    readonly keyring: Keyring,
    readonly catalog: ScopeCatalog,
    readonly cache: TokenCache,
    readonly changes: TokenChanges,
    readonly now: () => number,
  ) {}

  /**
   * Writes a change with its audit event and tells every instance, atomically; drops the local
   * entry at once.
   */
  async change(id: string, event: AuditEvent, write: (db: Db) => Promise<unknown>) {
    await this.db.transaction().execute(async (trx) => {
      await write(trx)
      await auditRepo.insert(trx, event)
      await this.changes.notify(trx, id)
    })
    this.cache.invalidate(id)
  }

  /** Drops tokens from this instance's cache after a transaction that changed them committed. */
  forget(ids: readonly string[]): void {
    for (const id of ids) this.cache.invalidate(id)
  }

  /**
   * A child token may change, list and make children of itself and its descendants alone:
   * 404 for any other token of its account, as for a token of another account.
   */
  async refuseOutsideFamily(target: string, child: string): Promise<void> {
    if (target === child) return
    const record = await tokensRepo.find(this.db, target)
    const ancestors = record === undefined ? [] : await ancestorsOf(this.db, record)
    if (!ancestors.some((a) => a.id === child)) {
      fail('notFound', 'a child token may change only itself and the tokens made under it')
    }
  }

  /** pk/sk strings are not stored: they are derived from (usage, username, id, signing key). */
  tokenString(record: { id: string; usage: 'pk' | 'sk'; username: string; keyId: string }) {
    return this.cache.tokenString(record.id, () => {
      const key = this.keyring.get(record.keyId)
      return key && encodeToken(record.usage, { u: record.username, a: record.id }, key.secret)
    })
  }

  /** The wire object, with the token string (create, update, and pk entries of a list). */
  view(record: TokenRecord): TokenView {
    const view = tokenView(record)
    const token = this.tokenString(record)
    if (token !== undefined) view.token = token
    return view
  }

  /** As list shows a token: the string of a `pk` only; an `sk` string is shown once, at create. */
  listed(record: TokenRecord): TokenView {
    return record.usage === 'pk' ? this.view(record) : tokenView(record)
  }

  /** A new permanent token, signed with the current key: secret if any scope is not public. */
  newRecord(account: AccountRecord, fields: NewTokenFields): TokenRecord {
    const at = isoTime(this.now())
    const secret = fields.scopes.some((id) => this.catalog.get(id)?.public !== true)
    return {
      id: newTokenId(),
      username: account.username,
      usage: secret ? 'sk' : 'pk',
      isDefault: fields.isDefault === true,
      note: fields.note,
      scopes: fields.scopes,
      allowedUrls: fields.allowedUrls,
      ...(fields.allowedIps == null ? {} : { allowedIps: fields.allowedIps }),
      ...(fields.expiresAt == null ? {} : { expiresAt: fields.expiresAt }),
      ...(fields.ratelimits == null ? {} : { ratelimits: fields.ratelimits }),
      scopeless: fields.scopes.length === 0,
      keyId: this.keyring.current.id,
      created: at,
      modified: at,
    }
  }

  /** Read for a change: from the database, never the cache (the caller will modify it). */
  async find(account: AccountRecord, id: string): Promise<TokenRecord> {
    const record = tokenIdPattern.test(id) ? await tokensRepo.find(this.db, id) : undefined
    if (record === undefined || record.username !== account.username) {
      return fail('notFound', 'no token with this id in this account')
    }
    return record
  }

  /** The requested scopes as the caller may give them (see checkScopes), by id. */
  checkScopes(account: AccountRecord, principal: Principal, requested: string[]): string[] {
    const available = this.catalog.availableTo(account.plan, account.features)
    return checkScopes(requested, available, principal, this.catalog).map((s) => s.id)
  }

  /**
   * A retiring token's string (rolled, working until its end) may roll, update or delete no
   * token but itself. Whoever still holds the old string (the reason it was rolled) must not
   * outlive its grace through another token: an update answers with that token's string (an sk
   * too), a roll with its successor's, and either may widen or unend it; nor kill or take over
   * the tokens that replaced it. Its line (the tokens that replaced it, or that it replaced,
   * retiring too) is refused with 403, any other token with the contract's 404 for what a kind of
   * token may not do (as for its creates: creationRefusal). `by`: the authorising token's id
   * (none for the dashboard, CLI, admin). Read from the database: a roll on another instance
   * counts at once.
   */
  async refuseRetiring(target: TokenRecord, by: string | undefined): Promise<void> {
    if (by === undefined || by === target.id) return
    const caller = await tokensRepo.find(this.db, by)
    if (caller?.parent !== undefined) await this.refuseOutsideFamily(target.id, caller.id)
    if (caller?.retiresAt === undefined) return
    const since = retiringSince(caller.retiresAt)
    if ((caller.lineage ?? caller.id) === (target.lineage ?? target.id)) {
      fail('retiringLine', `${since}: use the token that replaced it`)
    }
    fail('notFound', `${since}: it may change no token but itself; use the token that replaced it`)
  }
}
