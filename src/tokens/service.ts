import { AccountDirectory } from '../accounts/directory.js'
import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { Batcher } from '../db/batcher.js'
import { localChanges, type TokenChanges } from '../db/changes.js'
import { insertDepth, insertWithEvents } from '../db/creates.js'
import type { Db } from '../db/database.js'
import type { AccountRecord, SortBy, TokenRecord } from '../db/repositories.js'
import { tokensRepo } from '../db/repositories.js'
import { fail } from '../errors.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { isoTime, parseTimestamp } from '../time.js'
import { TokenCache } from './cache.js'
import { encodeToken } from './codec.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import { type TokenView, tokenDocument, tokenView, withToken } from './document.js'
import { newTokenId, tokenIdPattern } from './ids.js'
import type { Keyring } from './keyring.js'
import type { Principal } from './principal.js'
import { checkScopes, normalizeAllowedIps, normalizeAllowedUrls } from './rules.js'
import type { UsageCounter } from './usage.js'
import { TokenValidator, type Validation } from './validator.js'

/** The fields a client sets on create and update. */
export interface TokenFields {
  note?: string
  scopes?: string[]
  allowedUrls?: string[] | null
  /** Tessera: IP ranges the token may be used from. */
  allowedIps?: string[] | null
}

export interface TemporaryInput {
  expires: string
  scopes?: string[]
  allowedUrls?: unknown
  allowedIps?: unknown
}

export interface ListQuery {
  usage?: 'pk' | 'sk'
  isDefault?: boolean
  limit: number
  sortby: SortBy
  start?: string
}

export interface TemporaryResult {
  token: string
  issued_at: string
  expires: string
  expires_in: number
}

const hourMs = 3_600_000
const dayMs = 24 * hourMs

const retiringDetails = (retiresAt: number) =>
  `it works until ${isoTime(retiresAt)}, then ends: roll the token that replaced it`

export interface TokenServiceDeps {
  db: Db
  keyring: Keyring
  catalog: ScopeCatalog
  cache?: TokenCache
  changes?: TokenChanges
  now?: () => number
  /** Accounts as validation sees them (gone, disabled); one is made when not given. */
  directory?: AccountDirectory
  /** Counts validations per token (last used, hourly usage). */
  usage?: UsageCounter
}

/** The rules of the contract for tokens. Sees no request: plain inputs, explicit dependencies. */
export class TokenService {
  private readonly db: Db
  private readonly keyring: Keyring
  private readonly catalog: ScopeCatalog
  private readonly cache: TokenCache
  private readonly changes: TokenChanges
  private readonly validator: TokenValidator
  /** Group commit of new tokens, each with its audit event, atomically (see insertWithEvents). */
  private readonly inserts: Batcher<{ record: TokenRecord; event: AuditEvent; document: string }>
  /** Temporary tokens are not stored: only their audit events, written in groups as well. */
  private readonly issued: Batcher<AuditEvent>
  readonly now: () => number
  readonly directory: AccountDirectory

  constructor(deps: TokenServiceDeps) {
    this.db = deps.db
    const db = this.db
    this.inserts = new Batcher(
      (items) =>
        insertWithEvents(
          db,
          items.map((i) => i.record),
          items.map((i) => i.event),
          items.map((i) => i.document),
        ),
      500,
      insertDepth(db),
    )
    this.issued = new Batcher((events) => insertWithEvents(db, [], events), 500, insertDepth(db))
    this.keyring = deps.keyring
    this.catalog = deps.catalog
    this.cache = deps.cache ?? new TokenCache({ enabled: false })
    this.changes = deps.changes ?? localChanges
    this.now = deps.now ?? Date.now
    this.directory = deps.directory ?? new AccountDirectory(this.db)
    this.validator = new TokenValidator(
      this.db,
      this.keyring,
      this.cache,
      this.now,
      this.directory,
      deps.usage,
    )
  }

  /**
   * Writes a change with its audit event and tells every instance, atomically; drops the local
   * entry at once.
   */
  private async change(id: string, event: AuditEvent, write: (db: Db) => Promise<unknown>) {
    await this.db.transaction().execute(async (trx) => {
      await write(trx)
      await auditRepo.insert(trx, event)
      await this.changes.notify(trx, id)
    })
    this.cache.invalidate(id)
  }

  /** Tells every instance that these tokens changed, within a caller's transaction. */
  async notifyChanged(trx: Db, ids: string[]): Promise<void> {
    for (const id of ids) await this.changes.notify(trx, id)
  }

  /** Drops tokens from this instance's cache after a caller's transaction committed. */
  forget(ids: string[]): void {
    for (const id of ids) this.cache.invalidate(id)
  }

  private event(
    action: AuditEvent['action'],
    actor: Actor,
    account: AccountRecord,
    id: string | undefined,
    details?: Record<string, unknown>,
  ): AuditEvent {
    const target = id === undefined ? { type: 'token' as const } : { type: 'token' as const, id }
    return auditEvent(this.now(), action, actor, target, account.username, details)
  }

  /** Parses, verifies and looks up a token string: see TokenValidator. */
  validate(token: string): Validation | Promise<Validation> {
    return this.validator.validate(token)
  }

  /** What `validate` would answer now, uncounted and without waiting: see TokenValidator. */
  peek(token: string): Validation | undefined {
    return this.validator.peek(token)
  }

  /** The wire object, with the token string (create, update, and pk entries of a list). */
  view(record: TokenRecord): TokenView {
    const view = tokenView(record)
    const token = this.tokenString(record)
    if (token !== undefined) view.token = token
    return view
  }

  /** pk/sk strings are not stored: they are derived from (usage, username, id, signing key). */
  tokenString(record: { id: string; usage: 'pk' | 'sk'; username: string; keyId: string }) {
    return this.cache.tokenString(record.id, () => {
      const key = this.keyring.get(record.keyId)
      return key && encodeToken(record.usage, { u: record.username, a: record.id }, key.secret)
    })
  }

  /** A new permanent token; also builds the default token of a new account. */
  newRecord(
    account: AccountRecord,
    fields: {
      note: string
      scopes: string[]
      allowedUrls: string[] | null
      allowedIps?: string[] | null
      isDefault?: boolean
    },
  ): TokenRecord {
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
      scopeless: fields.scopes.length === 0,
      keyId: this.keyring.current.id,
      created: at,
      modified: at,
    }
  }

  async create(
    account: AccountRecord,
    principal: Principal,
    input: TokenFields,
    actor: Actor,
  ): Promise<TokenView> {
    return this.view((await this.insertNew(account, principal, input, actor)).record)
  }

  /**
   * Create, answered as the JSON text of the token object: its document (written once, for the
   * answer and SQLite's row) with the token string added, rather than the object serialized
   * again by the route's schema.
   */
  async createJson(
    account: AccountRecord,
    principal: Principal,
    input: TokenFields,
    actor: Actor,
  ): Promise<string> {
    const { record, document } = await this.insertNew(account, principal, input, actor)
    const token = this.tokenString(record)
    // The answer's schema requires it: its key cannot be gone unless the key file was replaced.
    if (token === undefined) throw new Error(`no signing key ${record.keyId} for a new token`)
    return withToken(document, token)
  }

  private async insertNew(
    account: AccountRecord,
    principal: Principal,
    input: TokenFields,
    actor: Actor,
  ): Promise<{ record: TokenRecord; document: string }> {
    const allowedUrls = normalizeAllowedUrls(input.allowedUrls)
    const allowedIps = normalizeAllowedIps(input.allowedIps)
    const scopes = this.checkScopes(account, principal, input.scopes ?? [])
    const note = input.note ?? ''
    const record = this.newRecord(account, { note, scopes, allowedUrls, allowedIps })
    const event = this.event('token.created', actor, account, record.id, {
      usage: record.usage,
      scopes,
    })
    const document = tokenDocument(record)
    await this.inserts.add({ record, event, document })
    return { record, document }
  }

  async createTemporary(
    account: AccountRecord,
    principal: Principal,
    input: TemporaryInput,
    actor: Actor,
  ): Promise<TemporaryResult> {
    if (input.allowedUrls !== undefined) {
      fail('invalidResources', 'temporary tokens cannot have allowedUrls')
    }
    if (input.allowedIps !== undefined) {
      fail('invalidResources', 'temporary tokens cannot have allowedIps')
    }
    const expiresMs = parseTimestamp(input.expires)
    if (expiresMs === undefined)
      return fail('invalidResources', 'expires must be an ISO 8601 timestamp')
    const now = this.now()
    if (expiresMs < now) fail('expiresInPast')
    if (expiresMs > now + hourMs) fail('expiresTooFar')
    const exp = Math.floor(expiresMs / 1000)
    if (principal.exp !== undefined && exp > principal.exp) fail('expiresAfterAuthorizer')
    const scopes = this.checkScopes(account, principal, input.scopes ?? [])
    const iat = Math.floor(now / 1000)
    const payload = { u: account.username, exp, iat, scopes, client: 'api' as const }
    // Its string is never recorded: what it may do and until when.
    await this.issued.add(
      this.event('token.temporary_issued', actor, account, undefined, {
        scopes,
        expires: isoTime(exp * 1000),
      }),
    )
    return {
      token: encodeToken('tk', payload, this.keyring.current.secret),
      issued_at: isoTime(iat * 1000),
      expires: isoTime(exp * 1000),
      expires_in: exp - iat,
    }
  }

  async update(
    account: AccountRecord,
    principal: Principal,
    id: string,
    input: TokenFields,
    actor: Actor,
  ): Promise<TokenView> {
    if (
      input.note === undefined &&
      input.scopes === undefined &&
      input.allowedUrls === undefined &&
      input.allowedIps === undefined
    ) {
      fail('invalidResources', 'name at least one of note, scopes and allowedUrls')
    }
    const allowedUrls = normalizeAllowedUrls(input.allowedUrls)
    const allowedIps = normalizeAllowedIps(input.allowedIps)
    const scopes = input.scopes && this.checkScopes(account, principal, input.scopes)
    const record = await this.find(account, id)
    await this.refuseRetiringLine(record, principal.tokenId)
    const fields = ['note', 'scopes', 'allowedUrls', 'allowedIps'] as const
    const before = fields.map((k) => JSON.stringify(record[k] ?? null))
    if (scopes !== undefined) {
      if (record.scopeless && scopes.length > 0) {
        fail('invalidScopes', 'a token created with no scopes cannot be given scopes')
      }
      if (record.usage === 'pk' && scopes.some((id) => this.catalog.get(id)?.public !== true)) {
        fail('invalidScopes', 'a public token may hold public scopes only')
      }
      record.scopes = scopes
    }
    if (input.note !== undefined) record.note = input.note
    if (input.allowedUrls !== undefined) record.allowedUrls = allowedUrls
    if (input.allowedIps !== undefined) record.allowedIps = allowedIps
    record.modified = isoTime(this.now())
    // The fields whose value changed, not those sent: a form sends them all.
    const changed = fields.filter(
      (k, i) => input[k] !== undefined && JSON.stringify(record[k] ?? null) !== before[i],
    )
    const event = this.event('token.updated', actor, account, id, { fields: changed })
    await this.change(id, event, (db) => tokensRepo.update(db, record))
    return this.view(record)
  }

  /**
   * Rolls a pk/sk: a new token (new id and string; the same note, scopes, allowed URLs and
   * default flag, created now), while the old string works until `expires` (now when absent;
   * at most 24 hours ahead). Rules as for update. A token is rolled once: a retiring one is
   * refused (409), also when two rolls race (the retire is conditional, in the transaction). The
   * new token records the first of its line (`lineage`): see refuseRetiringLine.
   */
  async roll(
    account: AccountRecord,
    principal: Principal,
    id: string,
    input: { expires?: unknown },
    actor: Actor,
  ): Promise<TokenView> {
    if (principal.usage === 'tk') fail('temporaryNotRollable')
    const now = this.now()
    let endsAt = now
    if (input.expires !== undefined) {
      const at = typeof input.expires === 'string' ? parseTimestamp(input.expires) : undefined
      if (at === undefined) return fail('invalidResources', 'expires must be an ISO 8601 timestamp')
      if (at < now) fail('expiresInPast')
      if (at > now + dayMs) fail('rollTooFar')
      endsAt = at
    }
    const old = await this.find(account, id)
    if (old.retiresAt !== undefined && old.retiresAt <= now) {
      fail('notFound', 'no token with this id in this account')
    }
    await this.refuseRetiringLine(old, principal.tokenId)
    if (old.retiresAt !== undefined) return fail('tokenRetiring', retiringDetails(old.retiresAt))
    // The caller must hold every scope of the token, as to give them.
    this.checkScopes(account, principal, old.scopes)
    const record: TokenRecord = {
      ...this.newRecord(account, {
        note: old.note,
        scopes: old.scopes,
        allowedUrls: old.allowedUrls,
        allowedIps: old.allowedIps ?? null,
        isDefault: old.isDefault,
      }),
      usage: old.usage,
      scopeless: old.scopeless,
      lineage: old.lineage ?? old.id,
    }
    const retires = isoTime(endsAt)
    const event = this.event('token.rolled', actor, account, record.id, {
      previous: old.id,
      usage: record.usage,
      retires,
    })
    await this.db.transaction().execute(async (trx) => {
      // The old one first: one default token per account at any moment. Only if no other roll
      // came first (between `find` and here): then it is retiring (409) or gone (404).
      const ended =
        endsAt <= now
          ? await tokensRepo.deleteUnretired(trx, account.username, old.id)
          : await tokensRepo.retire(trx, old.id, retires)
      if (!ended) {
        const current = await tokensRepo.find(trx, old.id)
        if (current?.retiresAt === undefined) {
          fail('notFound', 'no token with this id in this account')
        } else fail('tokenRetiring', retiringDetails(current.retiresAt))
      }
      await tokensRepo.insert(trx, record)
      await auditRepo.insert(trx, event)
      await this.changes.notify(trx, old.id)
    })
    this.cache.invalidate(old.id)
    return this.view(record)
  }

  /** The account's tokens reported leaked and kept (flagged): id → when. */
  async leaked(account: AccountRecord): Promise<Map<string, string>> {
    return tokensRepo.leakedOf(this.db, account.username)
  }

  /** A rolled token's end (epoch ms), from the cache or the database; undefined if none. */
  async retiresAt(id: string): Promise<number | undefined> {
    const record = this.cache.get(id) ?? (await tokensRepo.find(this.db, id))
    return record?.retiresAt
  }

  /** Removes rolled tokens whose end has come (their strings are refused already). */
  async sweepRetired(): Promise<number> {
    const rows = await tokensRepo.retired(this.db, isoTime(this.now()), 500)
    for (const row of rows) {
      await this.db.transaction().execute(async (trx) => {
        await tokensRepo.delete(trx, row.username, row.id)
        await this.changes.notify(trx, row.id)
      })
      this.cache.invalidate(row.id)
    }
    return rows.length
  }

  async remove(account: AccountRecord, id: string, actor: Actor): Promise<void> {
    const record = await this.find(account, id)
    if (record.isDefault) fail('defaultTokenUndeletable')
    // The token that authorised an API request is its actor (principalActor).
    await this.refuseRetiringLine(record, actor.type === 'token' ? actor.id : undefined)
    const event = this.event('token.deleted', actor, account, id, { usage: record.usage })
    // Deleted by someone else in between: the outcome the caller asked for holds, and only the
    // deletion that removed the row is recorded.
    await this.db.transaction().execute(async (trx) => {
      if (await tokensRepo.delete(trx, account.username, id)) await auditRepo.insert(trx, event)
      await this.changes.notify(trx, id)
    })
    this.cache.invalidate(id)
  }

  /**
   * A page of the listing as the JSON array of the response, built from the stored documents:
   * `sk` entries as stored, `pk` entries with their token string added.
   */
  async list(account: AccountRecord, q: ListQuery): Promise<{ body: string; next?: string }> {
    const { username } = account
    let after: { at: string; id: string } | undefined
    if (q.start !== undefined) {
      const cursor = decodeCursor(q.start, username, q.sortby)
      if (cursor === undefined) return fail('badStart')
      after = cursor
    }
    const rows = await tokensRepo.list(this.db, {
      username,
      usage: q.usage,
      isDefault: q.isDefault,
      sortby: q.sortby,
      after,
      limit: q.limit + 1,
    })
    const page = rows.slice(0, q.limit)
    // Entries as tokensRepo.list makes them (see ListedEntry). Read in place: an object per
    // row here doubled the cost of a page.
    let document = ''
    const entries = page.map((entry) => {
      if (entry.startsWith('{')) {
        document = entry
        return entry
      }
      const keyEnd = entry.indexOf(' ')
      const idEnd = entry.indexOf(' ', keyEnd + 1)
      const id = entry.slice(keyEnd + 1, idEnd)
      const keyId = entry.slice(0, keyEnd)
      document = entry.slice(idEnd + 1)
      const token = this.tokenString({ id, usage: 'pk', username, keyId })
      return token === undefined ? document : withToken(document, token)
    })
    let next: string | undefined
    if (rows.length > q.limit && document !== '') {
      const last = JSON.parse(document) as TokenView
      next = encodeCursor({ username, sortby: q.sortby, at: last[q.sortby], id: last.id })
    }
    return { body: `[${entries.join(',')}]`, next }
  }

  /** One token of the account, as a list shows it: an `sk` without its string. */
  async get(account: AccountRecord, id: string): Promise<TokenView> {
    return this.listed(await this.find(account, id))
  }

  /** As list shows a token: the string of a `pk` only; an `sk` string is shown once, at create. */
  private listed(record: TokenRecord): TokenView {
    return record.usage === 'pk' ? this.view(record) : tokenView(record)
  }

  /**
   * A page of the account's tokens in created order, for people rather than clients: whole
   * objects, and cursors both ways. `start` and `before` are cursors of this listing.
   */
  async browse(
    account: AccountRecord,
    page: { start?: string; before?: string },
    limit = 100,
  ): Promise<{ tokens: TokenView[]; next?: string; previous?: string }> {
    const { username } = account
    const position = (cursor: string | undefined) => {
      if (cursor === undefined) return undefined
      return decodeCursor(cursor, username, 'created') ?? fail('badStart')
    }
    const before = position(page.before)
    const after = before === undefined ? position(page.start) : undefined
    const { rows } = await tokensRepo.browse(this.db, { username, after, before, limit: limit + 1 })
    const more = rows.length > limit
    const records = rows.slice(0, limit)
    if (before !== undefined) records.reverse()
    const cursor = (r: TokenRecord | undefined) =>
      r && encodeCursor({ username, sortby: 'created', at: r.created, id: r.id })
    return {
      tokens: records.map((r) => this.listed(r)),
      next: before !== undefined || more ? cursor(records.at(-1)) : undefined,
      previous: (before !== undefined ? more : after !== undefined)
        ? cursor(records[0])
        : undefined,
    }
  }

  /**
   * A retiring token's string (rolled, working until its end) may not roll, update or delete
   * another token of its line: the tokens that replaced it (or that it replaced, retiring too).
   * Otherwise whoever still holds the old string (the reason it was rolled) could kill or take
   * over its successor. `by`: the authorising token's id (none for the dashboard, CLI, admin).
   * Read from the database: a roll on another instance counts at once.
   */
  private async refuseRetiringLine(target: TokenRecord, by: string | undefined): Promise<void> {
    if (by === undefined || by === target.id) return
    const caller = await tokensRepo.find(this.db, by)
    if (caller?.retiresAt === undefined) return
    if ((caller.lineage ?? caller.id) !== (target.lineage ?? target.id)) return
    fail(
      'retiringLine',
      `the authorizing token was rolled and works until ${isoTime(caller.retiresAt)}: use the token that replaced it`,
    )
  }

  /** Read for a change: from the database, never the cache (the caller will modify it). */
  private async find(account: AccountRecord, id: string): Promise<TokenRecord> {
    const record = tokenIdPattern.test(id) ? await tokensRepo.find(this.db, id) : undefined
    if (record === undefined || record.username !== account.username) {
      return fail('notFound', 'no token with this id in this account')
    }
    return record
  }

  private checkScopes(account: AccountRecord, principal: Principal, requested: string[]): string[] {
    const available = this.catalog.availableTo(account.plan, account.features)
    return checkScopes(requested, available, principal, this.catalog).map((s) => s.id)
  }
}
