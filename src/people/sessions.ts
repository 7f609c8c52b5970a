import type { AccountService } from '../accounts/service.js'
import { type Actor, auditEvent, type SignInMethod } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { holdersRepo } from '../db/holders.js'
import { ApiError } from '../errors.js'
import { isoTime } from '../time.js'
import { accountTarget, openAccountsOf, type PeopleDeps } from './membership.js'
import { checkNewPassword, hashPassword } from './passwords.js'
import { digest, secret } from './secrets.js'
import { SetupLinkService } from './setup-links.js'
import { type SignInOptions, SignInService } from './sign-ins.js'

export type { SignedInPerson } from './sign-ins.js'

const minute = 60_000
const hour = 60 * minute
export const sessionIdleMs = 12 * hour
export const sessionLifetimeMs = 7 * 24 * hour
/** A session's last use is written at most this often: not a write per page view. */
const touchEveryMs = minute

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

/**
 * Account holders: sessions here; setup links and password sign-in in their own modules,
 * reached through this one service (DASHBOARD.md section 2 and 5). Link secrets and session
 * ids travel to the holder once and are stored only hashed.
 */
export class SessionService {
  private readonly deps: PeopleDeps
  private readonly setupLinks: SetupLinkService
  private readonly signIns: SignInService

  constructor(db: Db, accounts: AccountService, now: () => number) {
    this.deps = { db, accounts, now }
    this.setupLinks = new SetupLinkService(this.deps)
    this.signIns = new SignInService(this.deps)
  }

  invite(username: string, actor: Actor) {
    return this.setupLinks.issue(username, actor)
  }

  link(link: string) {
    return this.setupLinks.lookup(link)
  }

  completeSetup(link: string, password: string, confirm: string, actor: Actor) {
    return this.setupLinks.complete(link, password, confirm, actor)
  }

  signUp(username: string, password: string, actor: Actor) {
    return this.signIns.signUp(username, password, actor)
  }

  /** The enabled accounts the person belongs to, by username. */
  accountsOf(login: string) {
    return openAccountsOf(this.deps, login)
  }

  signIn(login: string, password: string, actor: Actor, options?: SignInOptions) {
    return this.signIns.signIn(login, password, actor, options)
  }

  recordPasskeySignIn(login: string, username: string, actor: Actor) {
    return this.signIns.recordPasskeySignIn(login, username, actor)
  }

  recordPasskeyFailure(actor: Actor) {
    return this.signIns.recordPasskeyFailure(actor)
  }

  recordSecondStep(login: string, actor: Actor, how: 'totp' | 'recovery' | 'passkey' | undefined) {
    return this.signIns.recordSecondStep(login, actor, how)
  }

  checkPassword(login: string, password: string) {
    return this.signIns.checkPassword(login, password)
  }

  /** Changes the password; every other session of the account ends. */
  async changePassword(
    session: Session,
    current: string,
    next: string,
    actor: Actor,
  ): Promise<void> {
    if ((await this.checkPassword(session.login, current)) === undefined) {
      throw new ApiError('wrongPassword', 'Current password is wrong')
    }
    checkNewPassword(next)
    const hash = await hashPassword(next)
    const { db, now } = this.deps
    await db.transaction().execute(async (trx) => {
      await holdersRepo.setPassword(trx, session.login, hash, isoTime(now()))
      await holdersRepo.endPersonSessions(trx, session.login, session.key)
      const target = accountTarget(session.username)
      await auditRepo.insert(
        trx,
        auditEvent(now(), 'password.changed', actor, target, session.username),
      )
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
    const now = this.deps.now()
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
    const { db } = this.deps
    await holdersRepo.pruneSessions(
      db,
      login,
      isoTime(now - sessionIdleMs),
      isoTime(now - sessionLifetimeMs),
    )
    await holdersRepo.addSession(db, {
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
    const { db } = this.deps
    const row = await holdersRepo.session(db, key)
    if (row === undefined) return undefined
    const now = this.deps.now()
    const idle = now - Date.parse(row.last_seen)
    if (idle >= sessionIdleMs || now - Date.parse(row.created) >= sessionLifetimeMs) {
      await holdersRepo.endSession(db, key)
      return undefined
    }
    if (idle >= touchEveryMs) await holdersRepo.touchSession(db, key, isoTime(now))
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
    const now = this.deps.now()
    await holdersRepo.proveSession(this.deps.db, session.key, isoTime(now))
    session.proven = now
  }

  /** Moves the session into another account the person belongs to (checked by the caller). */
  async switchAccount(session: Session, username: string): Promise<void> {
    await holdersRepo.moveSession(this.deps.db, session.key, username)
  }

  /** Sign out: this session ends. `actor` absent: replaced by a new sign-in, not recorded. */
  async endSession(session: Session, actor?: Actor): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      await holdersRepo.endSession(trx, session.key)
      if (actor === undefined) return
      const target = { type: 'session' as const, id: session.key.slice(0, 16) }
      const details = { which: 'this' }
      await auditRepo.insert(
        trx,
        auditEvent(this.deps.now(), 'sessions.ended', actor, target, session.username, details),
      )
    })
  }

  /** Sign out everywhere: every session of the person ends, in every account. */
  async endAllSessions(session: Session, actor: Actor): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      await holdersRepo.endPersonSessions(trx, session.login)
      const target = { type: 'session' as const }
      const details = { which: 'all' }
      await auditRepo.insert(
        trx,
        auditEvent(this.deps.now(), 'sessions.ended', actor, target, session.username, details),
      )
    })
  }
}
