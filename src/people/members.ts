import type { AccountService } from '../accounts/service.js'
import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { peopleRepo } from '../db/people.js'
import { ApiError } from '../errors.js'
import type { Mailer } from '../mail/mailer.js'
import { isoTime } from '../time.js'
import { personOfIdentity } from './identities.js'
import { InvitationService, type Invitee } from './invitations.js'
import { keepAnOwner, lockAccount, memberTarget, type PeopleDeps } from './membership.js'
import type { Identity } from './oidc.js'
import { PortalLinkService } from './portal-links.js'
import { byRank, checkRole, type Role } from './roles.js'

export type { Invitation } from './invitations.js'
export { normalEmail } from './membership.js'
export { allows, isRole, type Role, roles } from './roles.js'

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

/**
 * The people of accounts: members and roles here; invitations, portal links and single
 * sign-on matching in their own modules, reached through this one service. Every change is
 * written with its audit event in one transaction.
 */
export class MemberService {
  private readonly deps: PeopleDeps
  private readonly invitationLinks: InvitationService
  private readonly portalLinks: PortalLinkService

  constructor(
    db: Db,
    accounts: AccountService,
    now: () => number,
    portalReturnOrigins: readonly string[],
    mailer?: Mailer,
  ) {
    this.deps = { db, accounts, now, mailer }
    this.invitationLinks = new InvitationService(this.deps)
    this.portalLinks = new PortalLinkService(this.deps, portalReturnOrigins)
  }

  async list(username: string): Promise<Member[]> {
    await this.deps.accounts.get(username)
    const rows = await peopleRepo.members(this.deps.db, username)
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
    return members.sort((a, b) => byRank(a.role, b.role) || a.login.localeCompare(b.login))
  }

  /** The person's role in the account, if they belong to it. */
  async role(username: string, login: string): Promise<Role | undefined> {
    const row = await peopleRepo.membership(this.deps.db, username, login)
    return row === undefined ? undefined : (row.role as Role)
  }

  /** The accounts the person belongs to, with their role in each, by username. */
  async memberships(login: string): Promise<{ username: string; role: Role }[]> {
    const rows = await peopleRepo.membershipsOf(this.deps.db, login)
    return rows.map((r) => ({ username: r.username, role: r.role as Role }))
  }

  async person(login: string) {
    return peopleRepo.person(this.deps.db, login)
  }

  /** A person's role changes; their sessions in the account end (they sign in again). */
  async setRole(
    username: string,
    login: string,
    roleInput: unknown,
    actor: Actor,
  ): Promise<Member> {
    const role = checkRole(roleInput)
    await this.deps.accounts.get(username)
    await this.deps.db.transaction().execute(async (trx) => {
      await lockAccount(trx, username)
      const before = await peopleRepo.membership(trx, username, login)
      if (before === undefined) throw new ApiError('memberMissing', `no such member: ${login}`)
      if (before.role === role) return
      await peopleRepo.setRole(trx, username, login, role)
      await keepAnOwner(trx, username)
      await peopleRepo.endSessionsOf(trx, login, username)
      const details = { role, previous: before.role }
      const target = memberTarget(login)
      await auditRepo.insert(
        trx,
        auditEvent(this.deps.now(), 'member.role_changed', actor, target, username, details),
      )
    })
    const member = (await this.list(username)).find((m) => m.login === login)
    if (member === undefined) throw new ApiError('memberMissing', `no such member: ${login}`)
    return member
  }

  /** Removes a person from the account; their sessions in it end at once. */
  async remove(username: string, login: string, actor: Actor): Promise<void> {
    await this.deps.accounts.get(username)
    await this.deps.db.transaction().execute(async (trx) => {
      await lockAccount(trx, username)
      const before = await peopleRepo.membership(trx, username, login)
      if (before === undefined) throw new ApiError('memberMissing', `no such member: ${login}`)
      await peopleRepo.removeMembership(trx, username, login)
      await keepAnOwner(trx, username)
      await peopleRepo.endSessionsOf(trx, login, username)
      const details = { role: before.role }
      const target = memberTarget(login)
      await auditRepo.insert(
        trx,
        auditEvent(this.deps.now(), 'member.removed', actor, target, username, details),
      )
    })
  }

  invitations(username: string) {
    return this.invitationLinks.open(username)
  }

  invite(username: string, input: { email: unknown; role: unknown }, actor: Actor) {
    return this.invitationLinks.invite(username, input, actor)
  }

  revokeInvitation(username: string, id: string, actor: Actor) {
    return this.invitationLinks.revoke(username, id, actor)
  }

  invitation(link: string) {
    return this.invitationLinks.lookup(link)
  }

  accept(link: string, who: Invitee, actor: Actor) {
    return this.invitationLinks.accept(link, who, actor)
  }

  createPortalLink(
    username: string,
    input: { email: unknown; name?: unknown; role: unknown; returnUrl?: unknown },
    actor: Actor,
  ) {
    return this.portalLinks.create(username, input, actor)
  }

  portalLink(link: string) {
    return this.portalLinks.lookup(link)
  }

  usePortalLink(link: string, actor: Actor) {
    return this.portalLinks.use(link, actor)
  }

  /** The person a provider's identity signs in, if any (see personOfIdentity). */
  ssoPerson(identity: Identity, actor: Actor) {
    return personOfIdentity(this.deps, identity, actor)
  }

  /** Drops used or expired links and flows (the background prune). */
  async prune(): Promise<void> {
    await peopleRepo.prune(this.deps.db, isoTime(this.deps.now() - 24 * 60 * 60_000))
  }
}
