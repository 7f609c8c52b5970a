import { usernamePattern } from '../accounts/directory.js'
import type { AccountRecord } from '../accounts/service.js'
import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { holdersRepo } from '../db/holders.js'
import { peopleRepo } from '../db/people.js'
import { accountTarget, openAccountsOf, type PeopleDeps } from './membership.js'
import { checkNewPassword, decoyHash, hashPassword, verifyPassword } from './passwords.js'

/** A person's way in that passed: who, and the accounts they may enter (enabled ones). */
export interface SignedInPerson {
  login: string
  accounts: string[]
}

export interface SignInOptions {
  /** Refuse people who have signed in through the provider (OIDC_ONLY). */
  ssoOnly?: boolean
  /** Whether the person must give a second factor before the sign-in succeeds. */
  secondFactor?: (login: string) => Promise<boolean>
}

/** Sign-up and sign-in with a password, and the audit records of every sign-in's outcome. */
export class SignInService {
  constructor(private readonly deps: PeopleDeps) {}

  /** Open sign-up: a new account (default plan, default token) with its password. */
  async signUp(username: string, password: string, actor: Actor): Promise<AccountRecord> {
    checkNewPassword(password)
    const hash = await hashPassword(password)
    return this.deps.accounts.create(username, undefined, [], actor, (trx, account) =>
      holdersRepo.setPassword(trx, account.username, hash, account.created),
    )
  }

  /**
   * Sign-in with a password: the person when the password is right and they belong to an
   * enabled account, recorded either way (a failure under the name as typed, cut to 64
   * characters; a success in the account the session will start in). `ssoOnly`: people whose
   * sign-in is single sign-on (OIDC_ONLY) are refused here.
   */
  async signIn(
    login: string,
    password: string,
    actor: Actor,
    options: SignInOptions = {},
  ): Promise<(SignedInPerson & { secondFactor: boolean }) | undefined> {
    const person = await this.checkPassword(login, password)
    const refused =
      person === undefined || (options.ssoOnly === true && person.oidc_issuer !== null)
    const accounts = refused ? [] : await openAccountsOf(this.deps, person.login)
    const home = accounts.includes(login) ? login : accounts[0]
    if (home === undefined || person === undefined) {
      await this.record('signin.failed', actor, login.slice(0, 64))
      return undefined
    }
    const ordered = [home, ...accounts.filter((a) => a !== home)]
    // With a second factor, the sign-in has succeeded only once that is given too.
    if (await options.secondFactor?.(person.login)) {
      return { login: person.login, accounts: ordered, secondFactor: true }
    }
    const who = { ...actor, login: person.login, method: 'password' as const }
    await this.record('signin.succeeded', who, home)
    return { login: person.login, accounts: ordered, secondFactor: false }
  }

  /**
   * The person when the password is right. Takes as long for an unknown login, or one without
   * a password, as for a wrong password.
   */
  async checkPassword(login: string, password: string) {
    const { db } = this.deps
    const person = usernamePattern.test(login) ? await peopleRepo.person(db, login) : undefined
    const stored = person?.password ?? undefined
    const right = await verifyPassword(password, stored ?? (await decoyHash()))
    return right && stored !== undefined ? person : undefined
  }

  /** A sign-in with a passkey alone. */
  async recordPasskeySignIn(login: string, username: string, actor: Actor): Promise<void> {
    await this.record('signin.succeeded', { ...actor, login, method: 'passkey' }, username)
  }

  /** A sign-in through single sign-on (the session begins after). */
  async recordSsoSignIn(login: string, username: string, actor: Actor): Promise<void> {
    await this.record('signin.succeeded', { ...actor, login, method: 'sso' }, username)
  }

  /** A passkey that proved nobody (unknown, removed, or a bad answer): no account to name. */
  async recordPasskeyFailure(actor: Actor): Promise<void> {
    const target = { type: 'session' as const }
    const event = auditEvent(this.deps.now(), 'signin.failed', actor, target, undefined, {
      method: 'passkey',
    })
    await auditRepo.insert(this.deps.db, event)
  }

  /** The second step of a sign-in, recorded: passed (`how`) or failed. */
  async recordSecondStep(
    login: string,
    actor: Actor,
    how: 'totp' | 'recovery' | 'passkey' | undefined,
  ): Promise<void> {
    const accounts = await openAccountsOf(this.deps, login)
    const home = accounts.includes(login) ? login : (accounts[0] ?? login)
    const who = { ...actor, login, method: 'password' as const }
    if (how === undefined) await this.record('signin.failed', who, home, { secondFactor: true })
    else await this.record('signin.succeeded', who, home, { secondFactor: how })
  }

  private async record(
    action: 'signin.succeeded' | 'signin.failed',
    actor: Actor,
    username: string,
    details?: Record<string, unknown>,
  ) {
    const target = accountTarget(username)
    const event = auditEvent(this.deps.now(), action, actor, target, username, details)
    await auditRepo.insert(this.deps.db, event)
  }
}
