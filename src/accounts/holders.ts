import { createHash, randomBytes } from 'node:crypto'
import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { holdersRepo } from '../db/holders.js'
import type { AccountRecord } from '../db/repositories.js'
import { isoTime } from '../tokens/rules.js'
import { decoyHash, hashPassword, passwordProblem, verifyPassword } from './passwords.js'
import type { AccountService } from './service.js'

const minute = 60_000
const hour = 60 * minute
export const setupLinkLifetimeMs = 24 * hour
export const sessionIdleMs = 12 * hour
export const sessionLifetimeMs = 7 * 24 * hour
/** A session's last use is written at most this often: not a write per page view. */
const touchEveryMs = minute

/** 256 random bits, base64url: setup-link secrets, session ids and CSRF tokens. */
const secret = () => randomBytes(32).toString('base64url')
const digest = (value: string) => createHash('sha256').update(value).digest('hex')

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
  username: string
  csrf: string
}

/**
 * Account holders: passwords, one-time setup links and sessions (DASHBOARD.md section 2 and
 * 5). Link secrets and session ids travel to the holder once and are stored only hashed.
 */
export class HolderService {
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
      await holdersRepo.setPassword(trx, row.username, hash, at)
      await holdersRepo.endSessions(trx, row.username)
      await auditRepo.insert(trx, this.event('password.set', actor, row.username))
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

  /**
   * Sign-in: the account when the password is right and the account enabled, recorded either
   * way (a failure under the name as typed, cut to 64 characters).
   */
  async signIn(
    username: string,
    password: string,
    actor: Actor,
  ): Promise<AccountRecord | undefined> {
    const found = await this.checkPassword(username, password)
    const account = found?.disabled === true ? undefined : found
    const name = account?.username ?? username.slice(0, 64)
    await auditRepo.insert(
      this.db,
      this.event(account ? 'signin.succeeded' : 'signin.failed', actor, name),
    )
    return account
  }

  /**
   * The account when the password is right. Takes as long for an unknown username, or one
   * without a password, as for a wrong password.
   */
  async checkPassword(username: string, password: string): Promise<AccountRecord | undefined> {
    const account = await this.accounts.find(username)
    const stored = account && (await holdersRepo.password(this.db, account.username))
    const right = await verifyPassword(password, stored ?? (await decoyHash()))
    return right && stored !== undefined ? account : undefined
  }

  /** Changes the password; every other session of the account ends. */
  async changePassword(
    session: Session,
    current: string,
    next: string,
    actor: Actor,
  ): Promise<void> {
    if ((await this.checkPassword(session.username, current)) === undefined) {
      throw new HolderError('wrongPassword', 'Current password is wrong')
    }
    checkNewPassword(next)
    const hash = await hashPassword(next)
    await this.db.transaction().execute(async (trx) => {
      await holdersRepo.setPassword(trx, session.username, hash, isoTime(this.now()))
      await holdersRepo.endSessions(trx, session.username, session.key)
      await auditRepo.insert(trx, this.event('password.changed', actor, session.username))
    })
  }

  /** A new session (a new id at every sign-in); returns the id for the cookie. */
  async startSession(username: string): Promise<{ id: string; session: Session }> {
    const id = secret()
    const now = this.now()
    const session = { key: digest(id), username, csrf: secret() }
    await holdersRepo.pruneSessions(
      this.db,
      username,
      isoTime(now - sessionIdleMs),
      isoTime(now - sessionLifetimeMs),
    )
    await holdersRepo.addSession(this.db, {
      id_hash: session.key,
      username,
      csrf: session.csrf,
      created: isoTime(now),
      last_seen: isoTime(now),
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
    return { key, username: row.username, csrf: row.csrf }
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

  /** Sign out everywhere: every session of the account ends. */
  async endAllSessions(username: string, actor: Actor): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await holdersRepo.endSessions(trx, username)
      const target = { type: 'session' as const }
      const details = { which: 'all' }
      await auditRepo.insert(trx, this.event('sessions.ended', actor, username, target, details))
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
