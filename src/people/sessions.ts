import { usernamePattern } from '../accounts/directory.js'
import type { AccountService } from '../accounts/service.js'
import { type Actor, type AuditEvent, auditEvent, type SignInMethod } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { holdersRepo } from '../db/holders.js'
import { peopleRepo } from '../db/people.js'
import type { AccountRecord } from '../db/repositories.js'
import { isoTime } from '../time.js'
import { decoyHash, hashPassword, passwordProblem, verifyPassword } from './passwords.js'
import { digest, secret } from './secrets.js'

const minute = 60_000
const hour = 60 * minute
export const setupLinkLifetimeMs = 24 * hour
export const sessionIdleMs = 12 * hour
export const sessionLifetimeMs = 7 * 24 * hour
/** A session's last use is written at most this often: not a write per page view. */
const touchEveryMs = minute

export type HolderFailure = 'password' | 'mismatch' | 'linkGone' | 'linkUnknown' | 'wrongPassword'

/** A refusal the dashboard shows next to its form (or as the page, for links). */
export class HolderError extends Error {
  constructor(
    readonly reason: HolderFailure,
    message: string,
  ) {
    super(message)
  }
}

export interface Session {
  /** The hash under which the session is stored; never the id itself. */
  key: string
  /** The account the session is in now. */
  username: string
  /** The person signed in. */
  login: string
  method: SignInMethod
  /** Where the platform wants its people back (portal links). */
  returnUrl?: string
  csrf: string
  /** When the person last proved who they are here (epoch ms): the sign-in or a confirmation. */
  proven: number
  /** The account a portal link signed the session into. */
  linkAccount?: string
}

/** A person's way in that passed: who, and the accounts they may enter (enabled ones). */
export interface SignedInPerson {
  login: string
  accounts: string[]
}

/**
 * Account holders: passwords, one-time setup links and sessions (DASHBOARD.md section 2 and
 * 5). Link secrets and session ids travel to the holder once and are stored only hashed.
 */
export class SessionService {
  constructor(
    private readonly db: Db,
    private readonly accounts: AccountService,
    private readonly now: () => number,
  ) {}

  private event(
    action: AuditEvent['action'],
    actor: Actor,
    username: string,
    target: AuditEvent['target'] = { type: 'account', id: username },
    details?: Record<string, unknown>,
  ): AuditEvent {
    return auditEvent(this.now(), action, actor, target, username, details)
  }

  /** A new setup link secret for an existing account; earlier links stop working. */
  async invite(username: string, actor: Actor): Promise<string> {
    const link = secret()
    const now = this.now()
    await this.db.transaction().execute(async (trx) => {
      await holdersRepo.endLinks(trx, username, isoTime(now))
      await holdersRepo.addLink(trx, {
        idHash: digest(link),
        username,
        created: isoTime(now),
        expires: isoTime(now + setupLinkLifetimeMs),
      })
      await auditRepo.insert(trx, this.event('account.invited', actor, username))
    })
    return link
  }

  /** Whether a setup link can still set a password, and whose it is; 'unknown': never issued. */
  async link(link: string): Promise<{ state: 'open' | 'gone' | 'unknown'; username: string }> {
    const row = await holdersRepo.link(this.db, digest(link))
    if (row === undefined) return { state: 'unknown', username: '' }
    const open = row.ended === null && row.expires > isoTime(this.now())
    return { state: open ? 'open' : 'gone', username: row.username }
  }

  /** Uses a setup link: sets the password and ends every session (it is also a reset). */
  async completeSetup(
    link: string,
    password: string,
    confirm: string,
    actor: Actor,
  ): Promise<string> {
    checkNewPassword(password, confirm)
    const row = await holdersRepo.link(this.db, digest(link))
    if (row === undefined) throw new HolderError('linkUnknown', 'This link is not valid.')
    const hash = await hashPassword(password)
    const at = isoTime(this.now())
    await this.db.transaction().execute(async (trx) => {
      if (!(await holdersRepo.useLink(trx, row.id_hash, at))) {
        throw new HolderError('linkGone', 'This link has been used or has expired.')
      }
      // The link is the operator's word: the holder (login = username) is an owner again.
      await peopleRepo.ensureHolder(trx, row.username, at)
      await holdersRepo.setPassword(trx, row.username, hash, at)
      await holdersRepo.endPersonSessions(trx, row.username)
      const who = { ...actor, login: row.username }
      await auditRepo.insert(trx, this.event('password.set', who, row.username))
    })
    return row.username
  }

  /** Open sign-up: a new account (default plan, default token) with its password. */
  async signUp(username: string, password: string, actor: Actor): Promise<AccountRecord> {
    checkNewPassword(password)
    const hash = await hashPassword(password)
    return this.accounts.create(username, undefined, [], actor, (trx, account) =>
      holdersRepo.setPassword(trx, account.username, hash, account.created),
    )
  }

  /** The enabled accounts the person belongs to, by username. */
  async accountsOf(login: string): Promise<string[]> {
    const memberships = await peopleRepo.membershipsOf(this.db, login)
    const open: string[] = []
    for (const m of memberships) {
      const account = await this.accounts.find(m.username)
      if (account !== undefined && !account.disabled) open.push(account.username)
    }
    return open
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
    options: { ssoOnly?: boolean; secondFactor?: (login: string) => Promise<boolean> } = {},
  ): Promise<(SignedInPerson & { secondFactor: boolean }) | undefined> {
    const person = await this.checkPassword(login, password)
    const refused =
      person === undefined || (options.ssoOnly === true && person.oidc_issuer !== null)
    const accounts = refused ? [] : await this.accountsOf(person.login)
    const home = accounts.includes(login) ? login : accounts[0]
    if (home === undefined || person === undefined) {
      await auditRepo.insert(this.db, this.event('signin.failed', actor, login.slice(0, 64)))
      return undefined
    }
    const ordered = [home, ...accounts.filter((a) => a !== home)]
    // With a second factor, the sign-in has succeeded only once that is given too.
    if (await options.secondFactor?.(person.login)) {
      return { login: person.login, accounts: ordered, secondFactor: true }
    }
    const who = { ...actor, login: person.login, method: 'password' as const }
    await auditRepo.insert(this.db, this.event('signin.succeeded', who, home))
    return { login: person.login, accounts: ordered, secondFactor: false }
  }

  /** A sign-in with a passkey alone. */
  async recordPasskeySignIn(login: string, username: string, actor: Actor): Promise<void> {
    const who = { ...actor, login, method: 'passkey' as const }
    await auditRepo.insert(this.db, this.event('signin.succeeded', who, username))
  }

  /** A passkey that proved nobody (unknown, removed, or a bad answer): no account to name. */
  async recordPasskeyFailure(actor: Actor): Promise<void> {
    const target = { type: 'session' as const }
    const event = auditEvent(this.now(), 'signin.failed', actor, target, undefined, {
      method: 'passkey',
    })
    await auditRepo.insert(this.db, event)
  }

  /** The second step of a sign-in, recorded: passed (`how`) or failed. */
  async recordSecondStep(
    login: string,
    actor: Actor,
    how: 'totp' | 'recovery' | 'passkey' | undefined,
  ): Promise<void> {
    const accounts = await this.accountsOf(login)
    const home = accounts.includes(login) ? login : (accounts[0] ?? login)
    const who = { ...actor, login, method: 'password' as const }
    const event =
      how === undefined
        ? this.event('signin.failed', who, home, undefined, { secondFactor: true })
        : this.event('signin.succeeded', who, home, undefined, { secondFactor: how })
    await auditRepo.insert(this.db, event)
  }

  /**
   * The person when the password is right. Takes as long for an unknown login, or one without
   * a password, as for a wrong password.
   */
  async checkPassword(login: string, password: string) {
    const person = usernamePattern.test(login) ? await peopleRepo.person(this.db, login) : undefined
    const stored = person?.password ?? undefined
    const right = await verifyPassword(password, stored ?? (await decoyHash()))
    return right && stored !== undefined ? person : undefined
  }

  /** Changes the password; every other session of the account ends. */
  async changePassword(
    session: Session,
    current: string,
    next: string,
    actor: Actor,
  ): Promise<void> {
    if ((await this.checkPassword(session.login, current)) === undefined) {
      throw new HolderError('wrongPassword', 'Current password is wrong')
    }
    checkNewPassword(next)
    const hash = await hashPassword(next)
    await this.db.transaction().execute(async (trx) => {
      await holdersRepo.setPassword(trx, session.login, hash, isoTime(this.now()))
      await holdersRepo.endPersonSessions(trx, session.login, session.key)
      await auditRepo.insert(trx, this.event('password.changed', actor, session.username))
    })
  }

  /** A new session (a new id at every sign-in); returns the id for the cookie. */
  async startSession(
    login: string,
    username: string,
    method: SignInMethod,
    returnUrl?: string,
  ): Promise<{ id: string; session: Session }> {
    const id = secret()
    const now = this.now()
    const session: Session = {
      key: digest(id),
      username,
      login,
      method,
      csrf: secret(),
      proven: now,
    }
    if (returnUrl !== undefined) session.returnUrl = returnUrl
    if (method === 'link') session.linkAccount = username
    await holdersRepo.pruneSessions(
      this.db,
      login,
      isoTime(now - sessionIdleMs),
      isoTime(now - sessionLifetimeMs),
    )
    await holdersRepo.addSession(this.db, {
      id_hash: session.key,
      username,
      login,
      method,
      return_url: returnUrl ?? null,
      csrf: session.csrf,
      created: isoTime(now),
      last_seen: isoTime(now),
      proven: isoTime(now),
      link_account: session.linkAccount ?? null,
    })
    return { id, session }
  }

  /** The live session of a cookie's id: not idle for 12 hours, not older than 7 days. */
  async session(id: string): Promise<Session | undefined> {
    const key = digest(id)
    const row = await holdersRepo.session(this.db, key)
    if (row === undefined) return undefined
    const now = this.now()
    const idle = now - Date.parse(row.last_seen)
    if (idle >= sessionIdleMs || now - Date.parse(row.created) >= sessionLifetimeMs) {
      await holdersRepo.endSession(this.db, key)
      return undefined
    }
    if (idle >= touchEveryMs) await holdersRepo.touchSession(this.db, key, isoTime(now))
    const session: Session = {
      key,
      username: row.username,
      login: row.login ?? row.username,
      method: row.method as SignInMethod,
      csrf: row.csrf,
      proven: Date.parse(row.proven ?? row.created),
    }
    if (row.return_url !== null) session.returnUrl = row.return_url
    if (row.link_account !== null) session.linkAccount = row.link_account
    return session
  }

  /** The person proved who they are again (the password or a code): the session says when. */
  async prove(session: Session): Promise<void> {
    const now = this.now()
    await holdersRepo.proveSession(this.db, session.key, isoTime(now))
    session.proven = now
  }

  /** Moves the session into another account the person belongs to (checked by the caller). */
  async switchAccount(session: Session, username: string): Promise<void> {
    await holdersRepo.moveSession(this.db, session.key, username)
  }

  /** Sign out: this session ends. `actor` absent: replaced by a new sign-in, not recorded. */
  async endSession(session: Session, actor?: Actor): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await holdersRepo.endSession(trx, session.key)
      if (actor === undefined) return
      const target = { type: 'session' as const, id: session.key.slice(0, 16) }
      const details = { which: 'this' }
      await auditRepo.insert(
        trx,
        this.event('sessions.ended', actor, session.username, target, details),
      )
    })
  }

  /** Sign out everywhere: every session of the person ends, in every account. */
  async endAllSessions(session: Session, actor: Actor): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await holdersRepo.endPersonSessions(trx, session.login)
      const target = { type: 'session' as const }
      const details = { which: 'all' }
      await auditRepo.insert(
        trx,
        this.event('sessions.ended', actor, session.username, target, details),
      )
    })
  }
}

function checkNewPassword(password: string, confirm?: string) {
  const problem = passwordProblem(password)
  if (problem !== undefined) throw new HolderError('password', problem)
  if (confirm !== undefined && confirm !== password) {
    throw new HolderError('mismatch', 'The two passwords are not the same')
  }
}
