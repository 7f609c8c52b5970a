import { usernamePattern } from '../accounts/directory.js'
import type { AccountService } from '../accounts/service.js'
import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { newPerson, type PersonRow, peopleRepo } from '../db/people.js'
import { accountsRepo } from '../db/repositories.js'
import { isoTime } from '../time.js'
import { hashPassword, passwordProblem } from './passwords.js'
import { digest, secret } from './secrets.js'

export const roles = ['owner', 'developer', 'viewer'] as const
/** `owner`: everything, members too; `developer`: tokens; `viewer`: reads, changes nothing. */
export type Role = (typeof roles)[number]
export const isRole = (value: unknown): value is Role => roles.includes(value as Role)
/** Whether `role` may do what `needed` may. */
export const allows = (role: Role, needed: Role) => rank[role] >= rank[needed]
const rank: Record<Role, number> = { viewer: 0, developer: 1, owner: 2 }

const minute = 60_000
export const invitationLifetimeMs = 7 * 24 * 60 * minute
export const portalLinkLifetimeMs = 5 * minute

export type MemberFailure =
  | 'missing'
  | 'invalid'
  | 'lastOwner'
  | 'gone'
  | 'unknown'
  | 'loginTaken'
  | 'password'
  | 'mismatch'

/** A refusal: the admin API maps it to its error table, the dashboard shows its message. */
export class MemberError extends Error {
  constructor(
    readonly reason: MemberFailure,
    message: string,
  ) {
    super(message)
  }
}

export interface Member {
  login: string
  email?: string
  name?: string
  role: Role
  /** When they joined the account. */
  created: string
  /** They have signed in through single sign-on. */
  sso: boolean
}

export interface Invitation {
  /** The first 16 characters of the stored hash: enough to revoke it, useless as the link. */
  id: string
  email: string
  role: Role
  invitedBy?: string
  created: string
  expires: string
}

/** What a single sign-on provider vouched for (the ID token's claims). */
export interface Identity {
  issuer: string
  subject: string
  email?: string
  emailVerified: boolean
  name?: string
}

const emailPattern = /^[^\s@<>()",;:\\[\]]{1,64}@[^\s@<>()",;:\\[\]]+\.[^\s@<>()",;:\\[\]]+$/

/** An email address as stored: trimmed, lowercased; undefined when it is not one. */
export function normalEmail(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const email = value.trim().toLowerCase()
  return email.length <= 254 && emailPattern.test(email) ? email : undefined
}

/**
 * The people of accounts: members and roles, invitations, portal links and single sign-on
 * matching. Every change is written with its audit event in one transaction; link secrets
 * travel to their holder once and are stored only hashed.
 */
export class MemberService {
  constructor(
    private readonly db: Db,
    private readonly accounts: AccountService,
    private readonly now: () => number,
    private readonly portalReturnOrigins: readonly string[],
  ) {}

  private event(
    action: AuditEvent['action'],
    actor: Actor,
    username: string,
    target: AuditEvent['target'],
    details?: Record<string, unknown>,
  ): AuditEvent {
    return auditEvent(this.now(), action, actor, target, username, details)
  }

  async list(username: string): Promise<Member[]> {
    await this.accounts.get(username)
    const rows = await peopleRepo.members(this.db, username)
    const members = rows.map((r) => {
      const m: Member = {
        login: r.login,
        role: r.role as Role,
        created: r.created,
        sso: r.oidc_subject !== null,
      }
      if (r.email !== null) m.email = r.email
      if (r.name !== null) m.name = r.name
      return m
    })
    // Owners first, then developers, then viewers; by login within a role.
    return members.sort((a, b) => rank[b.role] - rank[a.role] || a.login.localeCompare(b.login))
  }

  /** The person's role in the account, if they belong to it. */
  async role(username: string, login: string): Promise<Role | undefined> {
    const row = await peopleRepo.membership(this.db, username, login)
    return row === undefined ? undefined : (row.role as Role)
  }

  /** The accounts the person belongs to, with their role in each, by username. */
  async memberships(login: string): Promise<{ username: string; role: Role }[]> {
    const rows = await peopleRepo.membershipsOf(this.db, login)
    return rows.map((r) => ({ username: r.username, role: r.role as Role }))
  }

  async person(login: string) {
    return peopleRepo.person(this.db, login)
  }

  async invitations(username: string): Promise<Invitation[]> {
    const rows = await peopleRepo.openInvitations(this.db, username, isoTime(this.now()))
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

  /** A one-time invitation link's secret, for the inviter to pass on. */
  async invite(
    username: string,
    input: { email: unknown; role: unknown },
    actor: Actor,
  ): Promise<{ secret: string; invitation: Invitation }> {
    await this.accounts.get(username)
    const email = normalEmail(input.email)
    if (email === undefined) throw new MemberError('invalid', 'email must be an email address')
    const role = checkRole(input.role)
    const link = secret()
    const now = this.now()
    const row = {
      id_hash: digest(link),
      username,
      email,
      role,
      invited_by: actor.login ?? null,
      created: isoTime(now),
      expires: isoTime(now + invitationLifetimeMs),
      ended: null,
    }
    await this.db.transaction().execute(async (trx) => {
      await peopleRepo.addInvitation(trx, row)
      const target = { type: 'invitation' as const, id: row.id_hash.slice(0, 16) }
      await auditRepo.insert(
        trx,
        this.event('member.invited', actor, username, target, { email, role }),
      )
    })
    const invitation: Invitation = {
      id: row.id_hash.slice(0, 16),
      email,
      role,
      created: row.created,
      expires: row.expires,
    }
    if (actor.login !== undefined) invitation.invitedBy = actor.login
    return { secret: link, invitation }
  }

  async revokeInvitation(username: string, id: string, actor: Actor): Promise<void> {
    const open = await peopleRepo.openInvitations(this.db, username, isoTime(this.now()))
    const row = /^[0-9a-f]{16}$/.test(id) ? open.find((r) => r.id_hash.startsWith(id)) : undefined
    if (row === undefined) throw new MemberError('missing', `no such invitation: ${id}`)
    await this.db.transaction().execute(async (trx) => {
      if (!(await peopleRepo.endInvitation(trx, row.id_hash, isoTime(this.now()), username))) {
        throw new MemberError('missing', `no such invitation: ${id}`)
      }
      const target = { type: 'invitation' as const, id }
      const details = { email: row.email, role: row.role }
      await auditRepo.insert(
        trx,
        this.event('invitation.revoked', actor, username, target, details),
      )
    })
  }

  /** What an invitation link leads to, and whether it can still be used. */
  async invitation(link: string) {
    const row = await peopleRepo.invitation(this.db, digest(link))
    if (row === undefined) return { state: 'unknown' as const }
    const open = row.ended === null && row.expires > isoTime(this.now())
    const account = await this.accounts.find(row.username)
    if (!open || account === undefined || account.disabled) return { state: 'gone' as const }
    return { state: 'open' as const, username: row.username, email: row.email, role: row.role }
  }

  /**
   * Accepts an invitation: as a person already signed in (`login`), or as a new person with
   * the username and password they chose. Answers who joined which account.
   */
  async accept(
    link: string,
    who: { login: string } | { newLogin: string; password: string; confirm: string },
    actor: Actor,
  ): Promise<{ login: string; username: string }> {
    const row = await peopleRepo.invitation(this.db, digest(link))
    if (row === undefined) throw new MemberError('unknown', 'This invitation link is not valid.')
    let created: PersonRow | undefined
    if ('newLogin' in who) {
      const problem = passwordProblem(who.password)
      if (problem !== undefined) throw new MemberError('password', problem)
      if (who.confirm !== who.password) {
        throw new MemberError('mismatch', 'The two passwords are not the same')
      }
      if (!usernamePattern.test(who.newLogin)) {
        throw new MemberError(
          'invalid',
          'Username must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter or digit',
        )
      }
      const at = isoTime(this.now())
      created = newPerson(who.newLogin, at, {
        email: row.email,
        password: await hashPassword(who.password),
        password_changed: at,
      })
    }
    const login = created?.login ?? (who as { login: string }).login
    const at = isoTime(this.now())
    await this.db.transaction().execute(async (trx) => {
      if (!(await peopleRepo.endInvitation(trx, row.id_hash, at))) {
        throw new MemberError('gone', 'This invitation has been used, revoked or has expired.')
      }
      if (created !== undefined) {
        const taken =
          (await peopleRepo.person(trx, created.login)) !== undefined ||
          (await accountsRepo.find(trx, created.login)) !== undefined
        if (taken) throw new MemberError('loginTaken', 'This username is taken')
        await peopleRepo.insertPerson(trx, created)
      }
      await this.join(trx, row.username, login, row.role as Role, at)
      const details = { role: row.role, via: 'invitation' }
      await auditRepo.insert(
        trx,
        this.event('member.added', { ...actor, login }, row.username, memberTarget(login), details),
      )
    })
    return { login, username: row.username }
  }

  /** Adds the membership, or sets its role when the person already belongs. */
  private async join(trx: Db, username: string, login: string, role: Role, at: string) {
    if ((await peopleRepo.membership(trx, username, login)) === undefined) {
      await peopleRepo.addMembership(trx, { username, login, role, created: at })
    } else if (await peopleRepo.setRole(trx, username, login, role)) {
      await this.keepAnOwner(trx, username)
    }
  }

  /** A person's role changes; their sessions in the account end (they sign in again). */
  async setRole(
    username: string,
    login: string,
    roleInput: unknown,
    actor: Actor,
  ): Promise<Member> {
    const role = checkRole(roleInput)
    await this.accounts.get(username)
    await this.db.transaction().execute(async (trx) => {
      await lockAccount(trx, username)
      const before = await peopleRepo.membership(trx, username, login)
      if (before === undefined) throw new MemberError('missing', `no such member: ${login}`)
      if (before.role === role) return
      await peopleRepo.setRole(trx, username, login, role)
      await this.keepAnOwner(trx, username)
      await peopleRepo.endSessionsOf(trx, login, username)
      const details = { role, previous: before.role }
      await auditRepo.insert(
        trx,
        this.event('member.role_changed', actor, username, memberTarget(login), details),
      )
    })
    const member = (await this.list(username)).find((m) => m.login === login)
    if (member === undefined) throw new MemberError('missing', `no such member: ${login}`)
    return member
  }

  /** Removes a person from the account; their sessions in it end at once. */
  async remove(username: string, login: string, actor: Actor): Promise<void> {
    await this.accounts.get(username)
    await this.db.transaction().execute(async (trx) => {
      await lockAccount(trx, username)
      const before = await peopleRepo.membership(trx, username, login)
      if (before === undefined) throw new MemberError('missing', `no such member: ${login}`)
      await peopleRepo.removeMembership(trx, username, login)
      await this.keepAnOwner(trx, username)
      await peopleRepo.endSessionsOf(trx, login, username)
      const details = { role: before.role }
      await auditRepo.insert(
        trx,
        this.event('member.removed', actor, username, memberTarget(login), details),
      )
    })
  }

  private async keepAnOwner(trx: Db, username: string) {
    if ((await peopleRepo.owners(trx, username)) === 0) {
      throw new MemberError('lastOwner', 'an account must keep at least one owner')
    }
  }

  /** A one-time portal link for a person the platform vouches for: its secret and expiry. */
  async createPortalLink(
    username: string,
    input: { email: unknown; name?: unknown; role: unknown; returnUrl?: unknown },
    actor: Actor,
  ): Promise<{ secret: string; expires: string }> {
    await this.accounts.get(username)
    const email = normalEmail(input.email)
    if (email === undefined) throw new MemberError('invalid', 'email must be an email address')
    const role = checkRole(input.role)
    const name = input.name === undefined ? null : String(input.name).trim().slice(0, 128) || null
    const returnUrl = input.returnUrl === undefined ? null : this.checkReturnUrl(input.returnUrl)
    const link = secret()
    const now = this.now()
    const row = {
      id_hash: digest(link),
      username,
      email,
      name,
      role,
      return_url: returnUrl,
      created: isoTime(now),
      expires: isoTime(now + portalLinkLifetimeMs),
      used: null,
    }
    await this.db.transaction().execute(async (trx) => {
      await peopleRepo.addPortalLink(trx, row)
      const target = { type: 'portal_link' as const, id: row.id_hash.slice(0, 16) }
      await auditRepo.insert(
        trx,
        this.event('portal_link.created', actor, username, target, { email, role }),
      )
    })
    return { secret: link, expires: row.expires }
  }

  private checkReturnUrl(value: unknown): string {
    let url: URL | undefined
    try {
      url = typeof value === 'string' ? new URL(value) : undefined
    } catch {
      url = undefined
    }
    if (
      url === undefined ||
      url.protocol !== 'https:' ||
      url.username !== '' ||
      url.password !== '' ||
      !this.portalReturnOrigins.includes(url.origin)
    ) {
      throw new MemberError(
        'invalid',
        'returnUrl must be an https URL on an origin listed in PORTAL_RETURN_ORIGINS',
      )
    }
    return url.href
  }

  /** What a portal link leads to; `returnUrl` also for a used one (the page's way back). */
  async portalLink(link: string) {
    const row = await peopleRepo.portalLink(this.db, digest(link))
    if (row === undefined) return { state: 'gone' as const }
    const open = row.used === null && row.expires > isoTime(this.now())
    if (!open) return { state: 'gone' as const, returnUrl: row.return_url }
    const { username, email, role } = row
    return {
      state: 'open' as const,
      returnUrl: row.return_url,
      username,
      email,
      role: role as Role,
    }
  }

  /**
   * Uses a portal link, once: the member of the link's account with its email (or a new person)
   * gets its role, and is who the new session is for. Undefined when the link cannot be used.
   * The platform vouches for the email in this account only: a person of another account with
   * the same email is never matched (anyone can accept an invitation and claim an email).
   */
  async usePortalLink(
    link: string,
    actor: Actor,
  ): Promise<{ login: string; username: string; returnUrl: string | null } | undefined> {
    const row = await peopleRepo.portalLink(this.db, digest(link))
    if (row === undefined) return undefined
    const account = await this.accounts.find(row.username)
    if (account === undefined || account.disabled) return undefined
    const at = isoTime(this.now())
    let login = ''
    const used = await this.db.transaction().execute(async (trx) => {
      if (!(await peopleRepo.usePortalLink(trx, row.id_hash, at))) return false
      await lockAccount(trx, row.username)
      const known = (await peopleRepo.memberByEmail(trx, row.username, row.email))?.login
      login = known ?? (await freeLogin(trx, row.email))
      if (known === undefined) {
        const proven = { email: row.email, email_proof: 'portal', name: row.name }
        await peopleRepo.insertPerson(trx, newPerson(login, at, proven))
      } else if (row.name !== null) {
        await peopleRepo.updatePerson(trx, login, { name: row.name })
      }
      const before = await peopleRepo.membership(trx, row.username, login)
      await this.join(trx, row.username, login, row.role as Role, at)
      if (before?.role !== row.role) {
        const action = before === undefined ? 'member.added' : 'member.role_changed'
        const details = { role: row.role, via: 'portal_link' }
        const who = { ...actor, login, method: 'link' as const }
        await auditRepo.insert(
          trx,
          this.event(action, who, row.username, memberTarget(login), details),
        )
      }
      const who = { ...actor, login, method: 'link' as const }
      await auditRepo.insert(
        trx,
        this.event('signin.succeeded', who, row.username, accountTarget(row.username)),
      )
      return true
    })
    return used ? { login, username: row.username, returnUrl: row.return_url } : undefined
  }

  /**
   * Single sign-on: the person the provider's identity is linked to; or, at their first SSO
   * sign-in with a verified email, the person whose same email was proven (by a provider or a
   * portal link; never one typed when accepting an invitation), or a new person for the open
   * invitations to this email (they join those accounts). The identity is then linked, and the
   * email no longer matters. Undefined: nobody to sign in.
   */
  async ssoPerson(identity: Identity, actor: Actor): Promise<PersonRow | undefined> {
    const linked = await peopleRepo.byIdentity(this.db, identity.issuer, identity.subject)
    if (linked !== undefined) return linked
    const email = normalEmail(identity.email)
    if (email === undefined || !identity.emailVerified) return undefined
    const link = { oidc_issuer: identity.issuer, oidc_subject: identity.subject }
    return this.db.transaction().execute(async (trx) => {
      const candidates = (await peopleRepo.byEmail(trx, email)).filter(
        (p) => p.email_proof !== null,
      )
      const person = candidates.find((p) => p.oidc_subject === null)
      if (person !== undefined) {
        const linked = { ...link, email_proof: 'sso' }
        await peopleRepo.updatePerson(trx, person.login, linked)
        return { ...person, ...linked }
      }
      if (candidates.length > 0) return undefined
      const at = isoTime(this.now())
      const invitations = await peopleRepo.openInvitationsFor(trx, email, at)
      if (invitations.length === 0) return undefined
      const login = await freeLogin(trx, email)
      const name = identity.name?.trim().slice(0, 128) || null
      const created = newPerson(login, at, { email, email_proof: 'sso', name, ...link })
      await peopleRepo.insertPerson(trx, created)
      const who = { ...actor, login, method: 'sso' as const }
      for (const invitation of invitations) {
        await peopleRepo.endInvitation(trx, invitation.id_hash, at)
        await this.join(trx, invitation.username, login, invitation.role as Role, at)
        const details = { role: invitation.role, via: 'invitation' }
        await auditRepo.insert(
          trx,
          this.event('member.added', who, invitation.username, memberTarget(login), details),
        )
      }
      return created
    })
  }

  /** Whether someone has this email without proof (they joined by invitation with a password). */
  async unproven(email: unknown): Promise<boolean> {
    const normal = normalEmail(email)
    if (normal === undefined) return false
    return (await peopleRepo.byEmail(this.db, normal)).some((p) => p.email_proof === null)
  }

  /** Open sign-up through single sign-on: a new account whose owner is the new person. */
  async ssoSignUp(identity: Identity, actor: Actor): Promise<PersonRow | undefined> {
    const email = normalEmail(identity.email)
    if (email === undefined || !identity.emailVerified) return undefined
    const username = await freeLogin(this.db, email)
    await this.accounts.create(username, undefined, [], actor, async (trx) => {
      await peopleRepo.updatePerson(trx, username, {
        email,
        email_proof: 'sso',
        name: identity.name?.slice(0, 128) ?? null,
        oidc_issuer: identity.issuer,
        oidc_subject: identity.subject,
      })
    })
    return peopleRepo.person(this.db, username)
  }

  /** Records a sign-in through single sign-on (the session begins after). */
  async recordSsoSignIn(login: string, username: string, actor: Actor): Promise<void> {
    const who = { ...actor, login, method: 'sso' as const }
    await auditRepo.insert(
      this.db,
      this.event('signin.succeeded', who, username, accountTarget(username)),
    )
  }

  /** Drops used or expired links and flows (the background prune). */
  async prune(): Promise<void> {
    await peopleRepo.prune(this.db, isoTime(this.now() - 24 * 60 * minute))
  }
}

const memberTarget = (login: string) => ({ type: 'member' as const, id: login })
const accountTarget = (username: string) => ({ type: 'account' as const, id: username })

function checkRole(value: unknown): Role {
  if (!isRole(value)) throw new MemberError('invalid', 'role must be owner, developer or viewer')
  return value
}

/**
 * Takes the account's row lock (PostgreSQL) so that two changes to its members cannot both
 * remove "the other" owner; SQLite writes one transaction at a time anyway.
 */
async function lockAccount(trx: Db, username: string) {
  await trx
    .updateTable('accounts')
    .set((eb) => ({ username: eb.ref('username') }))
    .where('username', '=', username)
    .execute()
}

/** A login for a person made from an email: its local part, numbered when taken. */
async function freeLogin(db: Db, email: string): Promise<string> {
  const local = email.split('@')[0] ?? ''
  const base =
    local
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, '-')
      .replace(/^[-_]+|[-_]+$/g, '')
      .slice(0, 24) || 'member'
  for (let n = 1; n < 50; n++) {
    const login = n === 1 ? base : `${base}-${n}`
    const taken =
      (await peopleRepo.person(db, login)) !== undefined ||
      (await accountsRepo.find(db, login)) !== undefined
    if (!taken) return login
  }
  return `${base.slice(0, 20)}-${secret()
    .slice(0, 8)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '0')}`
}
