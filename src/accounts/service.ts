import type { Db } from '../db/database.js'
import { type AccountRecord, accountsRepo, tokensRepo } from '../db/repositories.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import type { TokenView } from '../tokens/document.js'
import type { Principal } from '../tokens/principal.js'
import { isoTime } from '../tokens/rules.js'
import type { TokenService } from '../tokens/service.js'

/** Usernames travel in token payloads; this alphabet keeps their base64 free of `-` and `_`. */
export const usernamePattern = /^[a-z0-9][a-z0-9_-]{0,31}$/

export class AccountError extends Error {}

export class AccountService {
  /** Accounts are never changed or removed once created, so a found one can be kept. */
  private readonly known = new Map<string, AccountRecord>()

  constructor(
    private readonly db: Db,
    private readonly catalog: ScopeCatalog,
    private readonly tokens: TokenService,
  ) {}

  /** Accounts are never deleted: a known one is answered at once, without a promise. */
  find(username: string): AccountRecord | undefined | Promise<AccountRecord | undefined> {
    const known = this.known.get(username)
    if (known !== undefined || !usernamePattern.test(username)) return known
    return accountsRepo.find(this.db, username).then((account) => {
      if (account !== undefined) {
        if (this.known.size >= 100_000) this.known.clear()
        this.known.set(username, account)
      }
      return account
    })
  }

  /**
   * Creates an account with its default public token, in one transaction; `within` adds more
   * to that transaction (the holder's password at sign-up).
   */
  async create(
    username: string,
    plan = this.catalog.defaultPlan,
    features: string[] = [],
    within?: (trx: Db, account: AccountRecord) => Promise<void>,
  ): Promise<AccountRecord & { defaultToken: TokenView }> {
    if (!usernamePattern.test(username)) {
      throw new AccountError(
        'username must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter or digit',
      )
    }
    if (!this.catalog.hasPlan(plan)) throw new AccountError(`no such plan: ${plan}`)
    for (const f of features) {
      if (!this.catalog.hasFeature(f)) throw new AccountError(`no such feature: ${f}`)
    }
    const account: AccountRecord = {
      username,
      plan,
      features: [...new Set(features)],
      created: isoTime(this.tokens.now()),
    }
    const publicScopes = this.catalog
      .availableTo(account.plan, account.features)
      .filter((s) => s.public)
      .map((s) => s.id)
    const token = this.tokens.newRecord(account, {
      note: 'Default public token',
      scopes: publicScopes,
      allowedUrls: null,
      isDefault: true,
    })
    await this.db.transaction().execute(async (trx) => {
      if (await accountsRepo.find(trx, username)) {
        throw new AccountError(`account ${username} already exists`)
      }
      await accountsRepo.insert(trx, account)
      await tokensRepo.insert(trx, token)
      await within?.(trx, account)
    })
    return { ...account, defaultToken: this.tokens.view(token) }
  }

  /** The account holder: may use every scope available to the account (dashboard, CLI). */
  holder(account: AccountRecord): Principal {
    const scopes = this.catalog.availableTo(account.plan, account.features).map((s) => s.id)
    return { usage: 'sk', username: account.username, scopes: new Set(scopes) }
  }
}
