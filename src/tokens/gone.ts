import type { Db } from '../db/database.js'
import { goneTokensRepo } from '../db/gone-tokens.js'
import type { AccountRecord } from '../db/repositories.js'
import { BoundedMap } from './cache.js'

/** Accounts as validation reads them (AccountDirectory): cached when it may, else a read. */
export interface AccountLookup {
  find(username: string): AccountRecord | undefined | Promise<AccountRecord | undefined>
  peek(username: string): AccountRecord | undefined
}

/** A token deleted while its account stayed: whose it was; null when not that (unowned). */
export type Gone = { username: string; created: string } | null

/**
 * Whose each deleted pk/sk id was (gone_tokens), kept: an id never comes back, so a string of a
 * deleted token costs one look in the database per instance, not one a request.
 */
export class GoneTokens {
  private readonly known = new BoundedMap<Gone>(50_000)

  constructor(
    private readonly db: Db,
    private readonly accounts: AccountLookup,
  ) {}

  /** What is known of `id`; undefined when it was never looked up (or was forgotten). */
  get(id: string): Gone | undefined {
    return this.known.get(id)
  }

  /** Whose `id` was, from the database, kept. */
  async load(id: string): Promise<Gone> {
    const gone = (await goneTokensRepo.find(this.db, id)) ?? null
    this.known.set(id, gone)
    return gone
  }

  /**
   * Whether deleted `id` (`gone`) was made in the account that has `username` now: a string of
   * a deleted account, of a later account's name, or of a token deleted before gone_tokens kept
   * anything, is nobody's. Once its account is gone, so is its claim.
   */
  owned(id: string, gone: Gone, username: string): boolean | Promise<boolean> {
    if (gone === null || gone.username !== username) return false
    const account = this.accounts.find(username)
    return account instanceof Promise
      ? account.then((a) => this.madeIn(id, gone.created, a))
      : this.madeIn(id, gone.created, account)
  }

  private madeIn(id: string, created: string, account: AccountRecord | undefined): boolean {
    if (account !== undefined && account.created <= created) return true
    // No account has its name, or a later one: the one it was made in never will again.
    this.known.set(id, null)
    return false
  }
}
