import type { Db } from '../db/database.js'
import { type AccountRecord, accountsRepo } from '../db/repositories.js'

/** Usernames travel in token payloads; this alphabet keeps their base64 free of `-` and `_`. */
export const usernamePattern = /^[a-z0-9][a-z0-9_-]{0,31}$/

/**
 * Accounts by username, kept in process so that validating a token checks its account (gone,
 * disabled) without a query. Like TokenCache: exact only with invalidation (every change here
 * or on another instance drops the entry, see TokenChanges), off and empty while the change
 * feed is down, and `generation` keeps a read that raced an invalidation out of the cache.
 */
export class AccountDirectory {
  private readonly known = new Map<string, AccountRecord>()
  private enabled = true
  private generation = 0

  constructor(
    private readonly db: Db,
    private readonly max = 100_000,
  ) {}

  /** Answers a known account at once, without a promise. */
  find(username: string): AccountRecord | undefined | Promise<AccountRecord | undefined> {
    const known = this.enabled ? this.known.get(username) : undefined
    if (known !== undefined || !usernamePattern.test(username)) return known
    const readAt = this.generation
    return accountsRepo.find(this.db, username).then((account) => {
      if (account !== undefined && this.enabled && readAt === this.generation) {
        if (this.known.size >= this.max) this.known.clear()
        this.known.set(username, account)
      }
      return account
    })
  }

  /** The account when it is known here, without reading the database. */
  peek(username: string): AccountRecord | undefined {
    return this.enabled ? this.known.get(username) : undefined
  }

  invalidate(username: string) {
    this.generation++
    this.known.delete(username)
  }

  /** The change feed is down (false) or back (true): either way, start empty. */
  setEnabled(enabled: boolean) {
    this.generation++
    this.known.clear()
    this.enabled = enabled
  }
}
