import type { Kysely } from 'kysely'
import type {
  Database,
  InvitationsTable,
  MembershipsTable,
  PeopleTable,
  PortalLinksTable,
  SignInFlowsTable,
} from './schema.js'

type Executor = Kysely<Database>

export type PersonRow = PeopleTable
export type MembershipRow = MembershipsTable
export type InvitationRow = InvitationsTable
export type PortalLinkRow = PortalLinksTable
export type FlowRow = SignInFlowsTable

/** A person as first stored: no email, name, password or identity unless given. */
export const newPerson = (login: string, at: string, more: Partial<PersonRow> = {}): PersonRow => ({
  login,
  email: null,
  name: null,
  password: null,
  password_changed: null,
  oidc_issuer: null,
  oidc_subject: null,
  email_proof: null,
  created: at,
  ...more,
})

/** People, their memberships, invitations, portal links and sign-in flows (migration 0006). */
export const peopleRepo = {
  async person(db: Executor, login: string): Promise<PersonRow | undefined> {
    return db.selectFrom('people').selectAll().where('login', '=', login).executeTakeFirst()
  },

  async byIdentity(db: Executor, issuer: string, subject: string) {
    return db
      .selectFrom('people')
      .selectAll()
      .where('oidc_issuer', '=', issuer)
      .where('oidc_subject', '=', subject)
      .executeTakeFirst()
  },

  /** People with this email (compared lowercased), oldest first. */
  async byEmail(db: Executor, email: string): Promise<PersonRow[]> {
    return db
      .selectFrom('people')
      .selectAll()
      .where('email', '=', email)
      .orderBy('created')
      .orderBy('login')
      .execute()
  },

  async insertPerson(db: Executor, row: PersonRow): Promise<void> {
    await db.insertInto('people').values(row).execute()
  },

  async updatePerson(
    db: Executor,
    login: string,
    set: Partial<Omit<PersonRow, 'login' | 'created'>>,
  ): Promise<void> {
    await db.updateTable('people').set(set).where('login', '=', login).execute()
  },

  /** Removes the person if they belong to no account any more. */
  async dropIfAlone(db: Executor, login: string): Promise<void> {
    await db
      .deleteFrom('people')
      .where('login', '=', login)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('memberships').select('login').where('login', '=', login))),
      )
      .execute()
  },

  async membership(
    db: Executor,
    username: string,
    login: string,
  ): Promise<MembershipRow | undefined> {
    return db
      .selectFrom('memberships')
      .selectAll()
      .where('username', '=', username)
      .where('login', '=', login)
      .executeTakeFirst()
  },

  /** The accounts a person belongs to, by username. */
  async membershipsOf(db: Executor, login: string): Promise<MembershipRow[]> {
    return db
      .selectFrom('memberships')
      .selectAll()
      .where('login', '=', login)
      .orderBy('username')
      .execute()
  },

  /** An account's members with their person, owners first, then by login. */
  async members(db: Executor, username: string) {
    return db
      .selectFrom('memberships')
      .innerJoin('people', 'people.login', 'memberships.login')
      .select([
        'memberships.login',
        'memberships.role',
        'memberships.created',
        'people.email',
        'people.name',
        'people.oidc_subject',
      ])
      .where('memberships.username', '=', username)
      .orderBy('memberships.login')
      .execute()
  },

  async owners(db: Executor, username: string): Promise<number> {
    const row = await db
      .selectFrom('memberships')
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .where('username', '=', username)
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow()
    return Number(row.n)
  },

  /** The member of the account with this email, if one has it. */
  async memberByEmail(db: Executor, username: string, email: string) {
    return db
      .selectFrom('memberships')
      .innerJoin('people', 'people.login', 'memberships.login')
      .select(['memberships.login', 'memberships.role'])
      .where('memberships.username', '=', username)
      .where('people.email', '=', email)
      .orderBy('memberships.created')
      .executeTakeFirst()
  },

  async addMembership(db: Executor, row: MembershipRow): Promise<void> {
    await db.insertInto('memberships').values(row).execute()
  },

  async setRole(db: Executor, username: string, login: string, role: string): Promise<boolean> {
    const r = await db
      .updateTable('memberships')
      .set({ role })
      .where('username', '=', username)
      .where('login', '=', login)
      .executeTakeFirst()
    return r.numUpdatedRows === 1n
  },

  async removeMembership(db: Executor, username: string, login: string): Promise<boolean> {
    const r = await db
      .deleteFrom('memberships')
      .where('username', '=', username)
      .where('login', '=', login)
      .executeTakeFirst()
    return r.numDeletedRows === 1n
  },

  /** Ends the person's sessions in one account (all accounts when `username` is absent). */
  async endSessionsOf(db: Executor, login: string, username?: string): Promise<void> {
    let q = db.deleteFrom('sessions').where('login', '=', login)
    if (username !== undefined) q = q.where('username', '=', username)
    await q.execute()
  },

  async addInvitation(db: Executor, row: InvitationRow): Promise<void> {
    await db.insertInto('invitations').values(row).execute()
  },

  async invitation(db: Executor, idHash: string): Promise<InvitationRow | undefined> {
    return db.selectFrom('invitations').selectAll().where('id_hash', '=', idHash).executeTakeFirst()
  },

  /** The account's invitations still open at `at`, newest first. */
  async openInvitations(db: Executor, username: string, at: string): Promise<InvitationRow[]> {
    return db
      .selectFrom('invitations')
      .selectAll()
      .where('username', '=', username)
      .where('ended', 'is', null)
      .where('expires', '>', at)
      .orderBy('created', 'desc')
      .execute()
  },

  /** Open invitations for this email, in any account, oldest first. */
  async openInvitationsFor(db: Executor, email: string, at: string): Promise<InvitationRow[]> {
    return db
      .selectFrom('invitations')
      .selectAll()
      .where('email', '=', email)
      .where('ended', 'is', null)
      .where('expires', '>', at)
      .orderBy('created')
      .execute()
  },

  /** Ends an invitation if still open at `at`; false when it was not. */
  async endInvitation(db: Executor, idHash: string, at: string, username?: string) {
    let q = db
      .updateTable('invitations')
      .set({ ended: at })
      .where('id_hash', '=', idHash)
      .where('ended', 'is', null)
      .where('expires', '>', at)
    if (username !== undefined) q = q.where('username', '=', username)
    const r = await q.executeTakeFirst()
    return r.numUpdatedRows === 1n
  },

  async addPortalLink(db: Executor, row: PortalLinkRow): Promise<void> {
    await db.insertInto('portal_links').values(row).execute()
  },

  async portalLink(db: Executor, idHash: string): Promise<PortalLinkRow | undefined> {
    return db
      .selectFrom('portal_links')
      .selectAll()
      .where('id_hash', '=', idHash)
      .executeTakeFirst()
  },

  /** Uses a portal link if still unused and unexpired at `at`; false when it was not. */
  async usePortalLink(db: Executor, idHash: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('portal_links')
      .set({ used: at })
      .where('id_hash', '=', idHash)
      .where('used', 'is', null)
      .where('expires', '>', at)
      .executeTakeFirst()
    return r.numUpdatedRows === 1n
  },

  async addFlow(db: Executor, row: FlowRow): Promise<void> {
    await db.insertInto('sign_in_flows').values(row).execute()
  },

  /** Takes a sign-in flow: it is gone afterwards, whatever the answer (no second callback). */
  async takeFlow(db: Executor, idHash: string, at: string): Promise<FlowRow | undefined> {
    return db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('sign_in_flows')
        .selectAll()
        .where('id_hash', '=', idHash)
        .executeTakeFirst()
      if (row === undefined) return undefined
      const r = await trx
        .deleteFrom('sign_in_flows')
        .where('id_hash', '=', idHash)
        .executeTakeFirst()
      // Another instance took it first.
      if (r.numDeletedRows !== 1n) return undefined
      await trx.deleteFrom('sign_in_flows').where('expires', '<=', at).execute()
      return row.expires > at ? row : undefined
    })
  },

  /** Removes portal links, invitations and flows that ended before `before` (ISO). */
  async prune(db: Executor, before: string): Promise<void> {
    await db.deleteFrom('portal_links').where('expires', '<', before).execute()
    await db.deleteFrom('invitations').where('expires', '<', before).execute()
    await db.deleteFrom('sign_in_flows').where('expires', '<', before).execute()
  },

  /**
   * The holder of an account (login = its username) exists and is an owner of it: at account
   * creation, and again when an operator's setup link is used.
   */
  async ensureHolder(db: Executor, username: string, at: string): Promise<void> {
    if ((await peopleRepo.person(db, username)) === undefined) {
      await peopleRepo.insertPerson(db, newPerson(username, at))
    }
    if ((await peopleRepo.membership(db, username, username)) === undefined) {
      await peopleRepo.addMembership(db, { username, login: username, role: 'owner', created: at })
    }
  },

  /** At account creation: its holder, a new person of the same name; false if taken. */
  async claimHolder(db: Executor, username: string, at: string): Promise<boolean> {
    if ((await peopleRepo.person(db, username)) !== undefined) return false
    await peopleRepo.ensureHolder(db, username, at)
    return true
  },
}
