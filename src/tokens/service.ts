import type { Actor } from '../audit/events.js'
import type { GroupCommitStats } from '../db/batcher.js'
import { localChanges, type TokenChanges } from '../db/changes.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, tokensRepo } from '../db/repositories.js'
import type { TokenRecord, TokenView } from '../db/token-document.js'
import { familyRepo } from '../db/token-family.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { TokenCache } from './cache.js'
import { type CarveCredits, type ChildFields, createChild, noCredits } from './children.js'
import {
  type TemporaryInput,
  type TemporaryResult,
  TokenCreation,
  type TokenFields,
} from './creation.js'
import { type EndCause, endDescendants, type FamilyChange, maxDepth } from './family.js'
import type { Keyring } from './keyring.js'
import { type BrowseQuery, browsePage, type ListQuery, listPage } from './listing.js'
import type { Principal } from './principal.js'
import { type NewTokenFields, TokenRecords } from './records.js'
import { rollToken } from './roll.js'
import { removeToken, sweepRetired, type TokenChange, updateToken } from './updates.js'
import { type AccountLookup, TokenValidator, type Validation } from './validator.js'

export type { ListQuery, TemporaryInput, TemporaryResult, TokenFields, TokenView }

export interface TokenServiceDeps {
  db: Db
  keyring: Keyring
  catalog: ScopeCatalog
  cache?: TokenCache
  changes?: TokenChanges
  now?: () => number
  /** Accounts as validation sees them (gone, disabled): the AccountDirectory. */
  directory: AccountLookup & { invalidate(username: string): void }
  /** Where the group commits of creates are counted (/metrics). */
  groupCommits?: GroupCommitStats
  /** How many levels of child tokens an account may make, 1 to 4 (CHILD_TOKEN_DEPTH). */
  childDepth?: number
  /** Gives child tokens their credits out of their parents' (usage/credits-carve.ts). */
  carveCredits?: CarveCredits
}

/**
 * The rules of the contract for tokens. Sees no request: plain inputs, explicit dependencies.
 * Each operation lives in a file of its own (creation, updates, listing); this is their face.
 */
export class TokenService {
  private readonly records: TokenRecords
  private readonly validator: TokenValidator
  private readonly creation: TokenCreation
  readonly now: () => number
  readonly directory: TokenServiceDeps['directory']
  private readonly childDepth: number
  private readonly carveCredits: CarveCredits

  constructor(deps: TokenServiceDeps) {
    const { db, keyring } = deps
    const cache = deps.cache ?? new TokenCache({ enabled: false })
    this.now = deps.now ?? Date.now
    const changes = deps.changes ?? localChanges
    this.records = new TokenRecords(db, keyring, deps.catalog, cache, changes, this.now)
    this.creation = new TokenCreation(this.records, deps.groupCommits)
    this.directory = deps.directory
    this.childDepth = Math.min(deps.childDepth ?? maxDepth, maxDepth)
    this.carveCredits = deps.carveCredits ?? noCredits
    this.validator = new TokenValidator(db, keyring, cache, this.now, this.directory)
  }

  /** Tells every instance that these tokens changed, within a caller's transaction. */
  async notifyChanged(trx: Db, ids: string[]): Promise<void> {
    for (const id of ids) await this.records.changes.notify(trx, id)
  }

  /**
   * Ends the family of a token deleted in a caller's transaction (docs/machines.md): its
   * descendants' ids, to `forget` after the commit, and their audit events, for the caller to
   * write last.
   */
  endDescendants(trx: Db, root: TokenRecord, cause: EndCause, actor: Actor): Promise<FamilyChange> {
    return endDescendants(trx, this.records.changes, root, cause, actor, this.now())
  }

  /** Drops tokens from this instance's cache after a caller's transaction committed. */
  forget(ids: string[]): void {
    for (const id of ids) this.records.cache.invalidate(id)
  }

  /** Parses, verifies and looks up a token string: see TokenValidator. */
  validate(token: string): Validation | Promise<Validation> {
    return this.validator.validate(token)
  }

  /** Whether a refusal of pk/sk `id` named `username` is that account's: see TokenValidator. */
  owns(username: string, id: string): Promise<boolean> {
    return this.validator.owns(username, id)
  }

  /** What `validate` would answer now, uncounted and without waiting: see TokenValidator. */
  peek(token: string): Validation | undefined {
    return this.validator.peek(token)
  }

  /** The wire object, with the token string (create, update, and pk entries of a list). */
  view(record: TokenRecord): TokenView {
    return this.records.view(record)
  }

  /** As a list shows it: a pk with its string, an sk without (shown once, at create). */
  listed(record: TokenRecord): TokenView {
    return this.records.listed(record)
  }

  /** pk/sk strings are not stored: they are derived from (usage, username, id, signing key). */
  tokenString(record: { id: string; usage: 'pk' | 'sk'; username: string; keyId: string }) {
    return this.records.tokenString(record)
  }

  /** A new permanent token; also builds the default token of a new account. */
  newRecord(account: AccountRecord, fields: NewTokenFields): TokenRecord {
    return this.records.newRecord(account, fields)
  }

  async create(
    account: AccountRecord,
    principal: Principal,
    input: TokenFields,
    actor: Actor,
  ): Promise<TokenView> {
    if (principal.child && principal.tokenId !== undefined) {
      return this.createChild(account, principal, principal.tokenId, input, actor)
    }
    return this.view((await this.creation.insert(account, principal, input, actor)).record)
  }

  /**
   * Create, answered as the JSON text of the token object: its document (written once, for the
   * answer and SQLite's row) with the token string added, rather than the object serialized
   * again by the route's schema.
   */
  createJson(
    account: AccountRecord,
    principal: Principal,
    input: TokenFields,
    actor: Actor,
  ): Promise<string> {
    // A child token's create makes a child of its own: never wider than it (docs/machines.md).
    if (principal.child) return this.create(account, principal, input, actor).then(JSON.stringify)
    return this.creation.insertJson(account, principal, input, actor)
  }

  createTemporary(
    account: AccountRecord,
    principal: Principal,
    input: TemporaryInput,
    actor: Actor,
  ): Promise<TemporaryResult> {
    return this.creation.temporary(account, principal, input, actor)
  }

  /** A child token under `parentId`, never wider than it (createChild). */
  createChild(...change: TokenChange<ChildFields>): Promise<TokenView> {
    const [account, principal, parentId, input, actor] = change
    const { records, childDepth, carveCredits } = this
    return createChild(
      records,
      account,
      principal,
      parentId,
      input,
      actor,
      childDepth,
      carveCredits,
    )
  }

  update(...change: TokenChange<TokenFields>): Promise<TokenView> {
    return updateToken(this.records, ...change)
  }

  /** Rolls a pk/sk: a new token replaces it, the old string works until `expires` (rollToken). */
  roll(...change: TokenChange<{ expires?: unknown; children?: unknown }>): Promise<TokenView> {
    return rollToken(this.records, ...change)
  }

  /** A rolled token's end (epoch ms), from the cache or the database; undefined if none. */
  async retiresAt(id: string): Promise<number | undefined> {
    const record = this.records.cache.get(id) ?? (await tokensRepo.find(this.records.db, id))
    return record?.retiresAt
  }

  /** Removes rolled tokens whose end has come (their strings are refused already). */
  sweepRetired(): Promise<number> {
    return sweepRetired(this.records)
  }

  remove(account: AccountRecord, id: string, actor: Actor): Promise<void> {
    return removeToken(this.records, account, id, actor)
  }

  /**
   * A page of the listing as the JSON array of the response (see listPage). A child token lists
   * its own family alone: its children, or a descendant's (its account's other tokens, their pk
   * strings among them, would be wider than it).
   */
  async list(
    account: AccountRecord,
    q: ListQuery,
    principal?: Principal,
  ): Promise<{ body: string; next?: string }> {
    if (principal?.child && principal.tokenId !== undefined) {
      const parent = q.parent ?? principal.tokenId
      await this.records.refuseOutsideFamily(parent, principal.tokenId)
      return listPage(this.records, account, { ...q, parent })
    }
    return listPage(this.records, account, q)
  }

  /** Whether a token has children, in a caller's transaction (idle tokens: hygiene/idle.ts). */
  async hasChildren(trx: Db, id: string): Promise<boolean> {
    return (await familyRepo.children(trx, [id])).length > 0
  }

  /** A token's children (docs/machines.md), as a list shows them, in created order. */
  async children(account: AccountRecord, id: string): Promise<TokenView[]> {
    const record = await this.records.find(account, id)
    const children = await familyRepo.children(this.records.db, [record.id])
    return children.map((c) => this.records.listed(c))
  }

  /** One token of the account, as a list shows it: an `sk` without its string. */
  async get(account: AccountRecord, id: string): Promise<TokenView> {
    return this.records.listed(await this.records.find(account, id))
  }

  /** A page of the account's tokens in created order, for people (see browsePage). */
  browse(
    account: AccountRecord,
    page: BrowseQuery,
    limit = 100,
  ): Promise<{ tokens: TokenView[]; next?: string; previous?: string }> {
    return browsePage(this.records, account, page, limit)
  }
}
