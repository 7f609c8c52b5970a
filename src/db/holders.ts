import type { Kysely } from 'kysely'
import type { Database, SessionsTable } from './schema.js'

type Executor = Kysely<Database>

export type SessionRow = SessionsTable

/** Passwords, setup links and sessions of people (see migrations 0002 and 0006). */
export const holdersRepo = {
  async password(db: Executor, login: string): Promise<string | undefined> {
    const row = await db
      .selectFrom('people')
      .select('password')
      .where('login', '=', login)
      .executeTakeFirst()
    return row?.password ?? undefined
  },

  /** Sets the person's password; the person exists (see PeopleService). */
  async setPassword(db: Executor, login: string, hash: string, at: string): Promise<void> {
    await db
      .updateTable('people')
      .set({ password: hash, password_changed: at })
      .where('login', '=', login)
      .execute()
  },

  async addLink(
    db: Executor,
    link: { idHash: string; username: string; created: string; expires: string },
  ): Promise<void> {
    await db
      .insertInto('setup_links')
      .values({
        id_hash: link.idHash,
        username: link.username,
        created: link.created,
        expires: link.expires,
      })
      .execute()
  },

  async link(db: Executor, idHash: string) {
    return db.selectFrom('setup_links').selectAll().where('id_hash', '=', idHash).executeTakeFirst()
  },

  /** Ends every open link of the account (a newer one voids them). */
  async endLinks(db: Executor, username: string, at: string): Promise<void> {
    await db
      .updateTable('setup_links')
      .set({ ended: at })
      .where('username', '=', username)
      .where('ended', 'is', null)
      .execute()
  },

  /** Ends one link if it is still usable at `at`; false when it was not (used, voided, late). */
  async useLink(db: Executor, idHash: string, at: string): Promise<boolean> {
    const result = await db
      .updateTable('setup_links')
      .set({ ended: at })
      .where('id_hash', '=', idHash)
      .where('ended', 'is', null)
      .where('expires', '>', at)
      .executeTakeFirst()
    return result.numUpdatedRows === 1n
  },

  async addSession(db: Executor, row: SessionRow): Promise<void> {
    await db.insertInto('sessions').values(row).execute()
  },

  async session(db: Executor, idHash: string): Promise<SessionRow | undefined> {
    return db.selectFrom('sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst()
  },

  /** Moves the session into another account of its person. */
  async moveSession(db: Executor, idHash: string, username: string): Promise<void> {
    await db.updateTable('sessions').set({ username }).where('id_hash', '=', idHash).execute()
  },

  /** The person proved who they are again in this session. */
  async proveSession(db: Executor, idHash: string, at: string): Promise<void> {
    await db.updateTable('sessions').set({ proven: at }).where('id_hash', '=', idHash).execute()
  },

  async touchSession(db: Executor, idHash: string, at: string): Promise<void> {
    await db.updateTable('sessions').set({ last_seen: at }).where('id_hash', '=', idHash).execute()
  },

  async endSession(db: Executor, idHash: string): Promise<void> {
    await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute()
  },

  /** Ends every session in the account but `keep` (a hash), or every one. */
  async endSessions(db: Executor, username: string, keep?: string): Promise<void> {
    let q = db.deleteFrom('sessions').where('username', '=', username)
    if (keep !== undefined) q = q.where('id_hash', '!=', keep)
    await q.execute()
  },

  /** Ends every session of the person but `keep` (a hash), or every one. */
  async endPersonSessions(db: Executor, login: string, keep?: string): Promise<void> {
    let q = db.deleteFrom('sessions').where('login', '=', login)
    if (keep !== undefined) q = q.where('id_hash', '!=', keep)
    await q.execute()
  },

  /** Drops the person's sessions that can no longer be used. */
  async pruneSessions(
    db: Executor,
    login: string,
    idleBefore: string,
    createdBefore: string,
  ): Promise<void> {
    await db
      .deleteFrom('sessions')
      .where('login', '=', login)
      .where((eb) => eb.or([eb('last_seen', '<', idleBefore), eb('created', '<', createdBefore)]))
      .execute()
  },
}
