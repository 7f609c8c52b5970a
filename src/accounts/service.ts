import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { holdersRepo } from '../db/holders.js'
import { peopleRepo } from '../db/people.js'
import {
  type AccountRecord,
  accountsRepo,
  type TokenRecord,
  tokensRepo,
} from '../db/repositories.js'
import { ApiError } from '../errors.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { isoTime } from '../time.js'
import type { Principal } from '../tokens/principal.js'
import type { TokenService, TokenView } from '../tokens/service.js'
import { usernamePattern } from './directory.js'
import { type PolicyView, policyView, setPolicy } from './policy.js'
import {
  type LimitResolver,
  type RatelimitView,
  ratelimitView,
  setRatelimits,
} from './ratelimits.js'

/** An account as stored: what the dashboard and the API read of it. */
export type { AccountRecord, LimitResolver, PolicyView, RatelimitView }
export { usernamePattern }

export interface AccountChange {
  plan?: string
  features?: string[]
}

/** A deleted account's name can be taken again after this long (a tk's longest life). */
const reuseAfterMs = 3_600_000

const accountTarget = (username: string) => ({ type: 'account' as const, id: username })

/** What a change of the account's state is announced as on the change feed. */
export const accountChange = (username: string) => `account:${username}`

/**
 * Accounts: created by the CLI, the admin API and open sign-up alike, changed, disabled and
 * deleted by operators. Every change is written with its audit event in one transaction, and
 * told to every instance (see AccountDirectory), so that a disabled or deleted account's tokens
 * stop working fleet-wide within the feed's bound.
 */
export class AccountService {
  constructor(
    private readonly db: Db,
    private readonly catalog: ScopeCatalog,
    private readonly tokens: TokenService,
  ) {}

  /** Answered at once, without a promise, when the account is known. */
  find(username: string): AccountRecord | undefined | Promise<AccountRecord | undefined> {
    return this.tokens.directory.find(username)
  }

  /** Read for a change: from the database, never the directory. */
  async get(username: string): Promise<AccountRecord> {
    const account = usernamePattern.test(username)
      ? await accountsRepo.find(this.db, username)
      : undefined
    if (account === undefined) throw new ApiError('noSuchUser', `no such account: ${username}`)
    return account
  }

  /** A page of accounts in username order, after the username `after`. */
  list(page: { after?: string; limit: number }): Promise<AccountRecord[]> {
    return accountsRepo.list(this.db, page)
  }

  private checkPlan(plan: string, features: string[]) {
    if (!this.catalog.hasPlan(plan)) throw new ApiError('badPlan', `no such plan: ${plan}`)
    for (const f of features) {
      if (!this.catalog.hasFeature(f)) throw new ApiError('badPlan', `no such feature: ${f}`)
    }
  }

  private publicScopes(account: AccountRecord) {
    return this.catalog
      .availableTo(account.plan, account.features)
      .filter((s) => s.public)
      .map((s) => s.id)
  }

  /**
   * Creates an account with its default public token, in one transaction; `within` adds more
   * to that transaction (the holder's password at sign-up).
   */
  async create(
    username: string,
    plan: string | undefined,
    features: string[],
    actor: Actor,
    within?: (trx: Db, account: AccountRecord) => Promise<void>,
  ): Promise<AccountRecord & { defaultToken: TokenView }> {
    if (!usernamePattern.test(username)) {
      throw new ApiError(
        'badUsername',
        'username must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter or digit',
      )
    }
    const chosen = plan ?? this.catalog.defaultPlan
    this.checkPlan(chosen, features)
    const account: AccountRecord = {
      username,
      plan: chosen,
      features: [...new Set(features)],
      created: isoTime(this.tokens.now()),
      disabled: false,
    }
    const token = this.tokens.newRecord(account, {
      note: 'Default public token',
      scopes: this.publicScopes(account),
      allowedUrls: null,
      isDefault: true,
    })
    const details = { plan: account.plan, features: account.features }
    const target = accountTarget(username)
    const event = auditEvent(this.tokens.now(), 'account.created', actor, target, username, details)
    await this.db.transaction().execute(async (trx) => {
      if (await accountsRepo.find(trx, username)) {
        throw new ApiError('accountExists', `account ${username} already exists`)
      }
      // A temporary token of a deleted account lives up to an hour and names the account only
      // by username: the name is free again once every such token has expired.
      const since = isoTime(this.tokens.now() - reuseAfterMs)
      const deleted = await auditRepo.deletedSince(trx, username, since)
      if (deleted !== undefined) {
        throw new ApiError(
          'nameResting',
          `account ${username} was deleted at ${deleted}; the name can be used again an hour later`,
        )
      }
      await accountsRepo.insert(trx, account)
      // Its holder: a person of the same name, its first owner. Logins and usernames share a
      // namespace so that an account's holder signs in with the account's name.
      if (!(await peopleRepo.claimHolder(trx, username, account.created))) {
        throw new ApiError(
          'personExists',
          `account ${username} already exists (a person has that name)`,
        )
      }
      await tokensRepo.insert(trx, token)
      await within?.(trx, account)
      await auditRepo.insert(trx, event)
      // A name used before: instances that remember the old account forget it.
      await this.tokens.notifyChanged(trx, [accountChange(username)])
    })
    this.tokens.directory.invalidate(username)
    return { ...account, defaultToken: this.tokens.view(token) }
  }

  /**
   * Changes plan and features. Scopes the account no longer has are removed from its tokens
   * (never refused: an operator downgrading a plan must not have to edit tokens first), and
   * the default token holds every public scope of the new plan, as at creation.
   */
  async change(username: string, input: AccountChange, actor: Actor): Promise<AccountRecord> {
    const before = await this.get(username)
    const account: AccountRecord = {
      ...before,
      plan: input.plan ?? before.plan,
      features: input.features === undefined ? before.features : [...new Set(input.features)],
    }
    this.checkPlan(account.plan, account.features)
    const available = new Set(
      this.catalog.availableTo(account.plan, account.features).map((s) => s.id),
    )
    const modified = isoTime(this.tokens.now())
    const changed: TokenRecord[] = []
    await this.db.transaction().execute(async (trx) => {
      for (const token of await tokensRepo.ofAccount(trx, username)) {
        const scopes = token.isDefault
          ? this.publicScopes(account)
          : token.scopes.filter((s) => available.has(s))
        if (scopes.length === token.scopes.length && scopes.every((s, i) => s === token.scopes[i]))
          continue
        changed.push({ ...token, scopes, modified })
      }
      for (const token of changed) await tokensRepo.update(trx, token)
      await accountsRepo.update(trx, account)
      const details = {
        plan: account.plan,
        features: account.features,
        tokensChanged: changed.length,
      }
      const target = accountTarget(username)
      await auditRepo.insert(
        trx,
        auditEvent(this.tokens.now(), 'account.changed', actor, target, username, details),
      )
      await this.tokens.notifyChanged(trx, [accountChange(username), ...changed.map((t) => t.id)])
    })
    this.tokens.directory.invalidate(username)
    this.tokens.forget(changed.map((t) => t.id))
    return account
  }

  /** Disables or enables the account; disabling also ends its dashboard sessions. */
  async setDisabled(username: string, disabled: boolean, actor: Actor): Promise<AccountRecord> {
    const before = await this.get(username)
    const account = { ...before, disabled }
    if (before.disabled === disabled) return account
    await this.db.transaction().execute(async (trx) => {
      await accountsRepo.update(trx, account)
      if (disabled) await holdersRepo.endSessions(trx, username)
      const action = disabled ? 'account.disabled' : 'account.enabled'
      const target = accountTarget(username)
      await auditRepo.insert(trx, auditEvent(this.tokens.now(), action, actor, target, username))
      await this.tokens.notifyChanged(trx, [accountChange(username)])
    })
    this.tokens.directory.invalidate(username)
    return account
  }

  /** Deletes the account: every token is revoked, fleet-wide; its audit events remain. */
  async remove(username: string, actor: Actor): Promise<void> {
    const account = await this.get(username)
    let ids: string[] = []
    await this.db.transaction().execute(async (trx) => {
      ids = (await tokensRepo.ofAccount(trx, username)).map((t) => t.id)
      if (!(await accountsRepo.delete(trx, account.username))) {
        throw new ApiError('noSuchUser', `no such account: ${username}`)
      }
      // Its memberships are gone with it; its holder too, unless they belong elsewhere.
      await peopleRepo.dropIfAlone(trx, account.username)
      const details = { tokensRevoked: ids.length }
      const target = accountTarget(username)
      await auditRepo.insert(
        trx,
        auditEvent(this.tokens.now(), 'account.deleted', actor, target, username, details),
      )
      // Other instances may keep the records of its tokens: validation finds the account gone.
      await this.tokens.notifyChanged(trx, [accountChange(username)])
    })
    this.tokens.directory.invalidate(username)
    this.tokens.forget(ids)
  }

  /** The account's token policy: its owner's, its plan's and the stricter of them. */
  tokenPolicy(account: AccountRecord): PolicyView {
    return policyView(this.catalog, account)
  }

  /** Sets the owner's token policy (see setPolicy); read from the database first. */
  async setTokenPolicy(username: string, policy: unknown, actor: Actor): Promise<PolicyView> {
    const deps = { db: this.db, catalog: this.catalog, tokens: this.tokens }
    return setPolicy(deps, await this.get(username), policy, actor, accountChange(username))
  }

  /** The account's named rate limits: own, plan's, in force as `book` resolves them. */
  ratelimits(account: AccountRecord, book: LimitResolver): RatelimitView {
    return ratelimitView(this.catalog, book, account)
  }

  /** Replaces the account's own rate limits (see setRatelimits); read from the database first. */
  async setRatelimits(username: string, body: unknown, actor: Actor, book: LimitResolver) {
    const deps = { db: this.db, catalog: this.catalog, tokens: this.tokens, book }
    return setRatelimits(deps, await this.get(username), body, actor, accountChange(username))
  }

  /** The account holder: may use every scope available to the account (dashboard, CLI). */
  holder(account: AccountRecord): Principal {
    const scopes = this.catalog.availableTo(account.plan, account.features).map((s) => s.id)
    return { usage: 'sk', username: account.username, scopes: new Set(scopes) }
  }
}
