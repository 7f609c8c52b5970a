import { usernamePattern } from '../accounts/directory.js'
import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { invitationMailsRepo } from '../db/invitation-mails.js'
import { newPerson, type PersonRow, peopleRepo } from '../db/people.js'
import { ApiError } from '../errors.js'
import type { Mailer } from '../mail/mailer.js'
import { invitationMail } from '../mail/messages.js'
import { isoTime } from '../time.js'
import { join, loginTaken, memberTarget, newJoinLink, type PeopleDeps } from './membership.js'
import { hashPassword, passwordProblem } from './passwords.js'
import type { Role } from './roles.js'
import { digest } from './secrets.js'

export const invitationLifetimeMs = 7 * 24 * 60 * 60_000
/** The window of INVITATION_MAILS_PER_*: shorter than the day invitations are kept past their end. */
const mailWindowMs = 24 * 60 * 60_000

export interface Invitation {
  /** The first 16 characters of the stored hash: enough to revoke it, useless as the link. */
  id: string
  email: string
  role: Role
  invitedBy?: string
  created: string
  expires: string
}

/** Who accepts an invitation: a person signed in, or a new person with what they chose. */
export type Invitee = { login: string } | { newLogin: string; password: string; confirm: string }

/** Invitations to join an account: one-time links for an email, accepted by a person. */
export class InvitationService {
  constructor(private readonly deps: PeopleDeps) {}

  async open(username: string): Promise<Invitation[]> {
    const { db, now } = this.deps
    const rows = await peopleRepo.openInvitations(db, username, isoTime(now()))
    return rows.map((r) => {
      const i: Invitation = {
        id: r.id_hash.slice(0, 16),
        email: r.email,
        role: r.role as Role,
        created: r.created,
        expires: r.expires,
      }
      if (r.invited_by !== null) i.invitedBy = r.invited_by
      return i
    })
  }

  /**
   * A one-time invitation link's secret, for the inviter to pass on; and whether it is mailed
   * too (undefined without mail): not past the day's limits of invitation mails.
   */
  async invite(
    username: string,
    input: { email: unknown; role: unknown },
    actor: Actor,
  ): Promise<{ secret: string; invitation: Invitation; mailed?: boolean }> {
    const { link, idHash, email, role } = await newJoinLink(this.deps, username, input)
    const now = this.deps.now()
    const invitation: Invitation = {
      id: idHash.slice(0, 16),
      email,
      role,
      created: isoTime(now),
      expires: isoTime(now + invitationLifetimeMs),
    }
    if (actor.login !== undefined) invitation.invitedBy = actor.login
    const target = { type: 'invitation' as const, id: invitation.id }
    const event = auditEvent(now, 'member.invited', actor, target, username, { email, role })
    const { mailer } = this.deps
    const mailed = await this.deps.db.transaction().execute(async (trx) => {
      const { created, expires } = invitation
      const invitedBy = actor.login ?? null
      const mayMail = mailer && (await this.mayMail(trx, mailer, username, email, now))
      await peopleRepo.addInvitation(trx, {
        id_hash: idHash,
        username,
        email,
        role,
        invited_by: invitedBy,
        created,
        expires,
        ended: null,
      })
      await auditRepo.insert(trx, event)
      return mayMail
    })
    if (mailed === undefined) return { secret: link, invitation }
    if (mailed) this.mail(username, link, invitation)
    else mailer?.held('invitation')
    return { secret: link, invitation, mailed }
  }

  /**
   * Whether this invitation may be mailed: the account, and the address from any account, had
   * fewer invitations than their limits in the last 24 hours (mailed or not: one past a limit
   * keeps it reached). Counted in the database, so that it holds across instances.
   */
  private async mayMail(trx: Db, mailer: Mailer, username: string, email: string, now: number) {
    const made = await invitationMailsRepo.since(trx, username, email, isoTime(now - mailWindowMs))
    const { perAccount, perAddress } = mailer.invitationLimits
    return made.account < perAccount && made.address < perAddress
  }

  /**
   * The link to the invitee too, where Tessera has mail: not awaited, so a slow or refused
   * server never fails the invitation, which the inviter still sees and can pass on.
   */
  private mail(account: string, link: string, i: Invitation) {
    const { mailer } = this.deps
    if (mailer === undefined) return
    const url = `${mailer.origin}/account/invitations/${link}`
    const message = { account, role: i.role, link: url, expires: i.expires, inviter: i.invitedBy }
    void mailer.send({ to: [i.email], ...invitationMail(message) })
  }

  async revoke(username: string, id: string, actor: Actor): Promise<void> {
    const { db, now } = this.deps
    const open = await peopleRepo.openInvitations(db, username, isoTime(now()))
    const row = /^[0-9a-f]{16}$/.test(id) ? open.find((r) => r.id_hash.startsWith(id)) : undefined
    if (row === undefined) throw new ApiError('memberMissing', `no such invitation: ${id}`)
    await db.transaction().execute(async (trx) => {
      if (!(await peopleRepo.endInvitation(trx, row.id_hash, isoTime(now()), username))) {
        throw new ApiError('memberMissing', `no such invitation: ${id}`)
      }
      const target = { type: 'invitation' as const, id }
      const details = { email: row.email, role: row.role }
      await auditRepo.insert(
        trx,
        auditEvent(now(), 'invitation.revoked', actor, target, username, details),
      )
    })
  }

  /** What an invitation link leads to, and whether it can still be used. */
  async lookup(link: string) {
    const row = await peopleRepo.invitation(this.deps.db, digest(link))
    if (row === undefined) return { state: 'unknown' as const }
    const open = row.ended === null && row.expires > isoTime(this.deps.now())
    const account = await this.deps.accounts.find(row.username)
    if (!open || account === undefined || account.disabled) return { state: 'gone' as const }
    return { state: 'open' as const, username: row.username, email: row.email, role: row.role }
  }

  /**
   * Accepts an invitation: as a person already signed in (`login`), or as a new person with
   * the username and password they chose. Answers who joined which account.
   */
  async accept(
    link: string,
    who: Invitee,
    actor: Actor,
  ): Promise<{ login: string; username: string }> {
    const { db, now } = this.deps
    const row = await peopleRepo.invitation(db, digest(link))
    if (row === undefined) throw new ApiError('linkUnknown', 'This invitation link is not valid.')
    const created = 'newLogin' in who ? await this.newPerson(who, row.email) : undefined
    const login = created?.login ?? (who as { login: string }).login
    const at = isoTime(now())
    await db.transaction().execute(async (trx) => {
      if (!(await peopleRepo.endInvitation(trx, row.id_hash, at))) {
        throw new ApiError('linkGone', 'This invitation has been used, revoked or has expired.')
      }
      if (created !== undefined) {
        if (await loginTaken(trx, created.login)) {
          throw new ApiError('loginTaken', 'This username is taken')
        }
        await peopleRepo.insertPerson(trx, created)
      }
      await join(trx, row.username, login, row.role as Role, at)
      const details = { role: row.role, via: 'invitation' }
      const who = { ...actor, login }
      const target = memberTarget(login)
      await auditRepo.insert(
        trx,
        auditEvent(now(), 'member.added', who, target, row.username, details),
      )
    })
    return { login, username: row.username }
  }

  /** The person an invitation makes, once their username and password hold. */
  private async newPerson(
    who: { newLogin: string; password: string; confirm: string },
    email: string,
  ): Promise<PersonRow> {
    const problem = passwordProblem(who.password)
    if (problem !== undefined) throw new ApiError('badPassword', problem)
    if (who.confirm !== who.password) {
      throw new ApiError('passwordMismatch', 'The two passwords are not the same')
    }
    if (!usernamePattern.test(who.newLogin)) {
      throw new ApiError(
        'badUsername',
        'Username must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter or digit',
      )
    }
    const at = isoTime(this.deps.now())
    return newPerson(who.newLogin, at, {
      email,
      password: await hashPassword(who.password),
      password_changed: at,
    })
  }
}
