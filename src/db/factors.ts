import type { Kysely } from 'kysely'
import type { Database, FactorsTable } from './schema.js'

type Executor = Kysely<Database>

export type FactorRow = FactorsTable

/** Second factors, recovery codes, pending sign-ins, challenges, policies (migration 0007). */
export const factorsRepo = {
  async ofPerson(db: Executor, login: string): Promise<FactorRow[]> {
    return db
      .selectFrom('factors')
      .selectAll()
      .where('login', '=', login)
      .orderBy('created')
      .orderBy('id')
      .execute()
  },

  /** Whether the person has a confirmed second factor. */
  async has(db: Executor, login: string): Promise<boolean> {
    const row = await db
      .selectFrom('factors')
      .select('id')
      .where('login', '=', login)
      .where('confirmed', '=', 1)
      .limit(1)
      .executeTakeFirst()
    return row !== undefined
  },

  async insert(db: Executor, row: FactorRow): Promise<void> {
    await db.insertInto('factors').values(row).execute()
  },

  async remove(db: Executor, login: string, id: string): Promise<FactorRow | undefined> {
    const row = await db
      .selectFrom('factors')
      .selectAll()
      .where('login', '=', login)
      .where('id', '=', id)
      .executeTakeFirst()
    if (row === undefined) return undefined
    await db.deleteFrom('factors').where('id', '=', id).execute()
    return row
  },

  /** Drops an authenticator app that was never confirmed. */
  async dropUnconfirmed(db: Executor, login: string): Promise<void> {
    await db.deleteFrom('factors').where('login', '=', login).where('confirmed', '=', 0).execute()
  },

  /**
   * Accepts a TOTP step for the factor if it is later than the last one accepted (one
   * conditional update: two instances cannot both take the same code).
   */
  async takeStep(
    db: Executor,
    id: string,
    step: number,
    at: string,
    secret: string,
  ): Promise<boolean> {
    const r = await db
      .updateTable('factors')
      .set({ last_step: step, last_used: at, confirmed: 1, secret })
      .where('id', '=', id)
      .where('last_step', '<', step)
      .executeTakeFirst()
    return r.numUpdatedRows === 1n
  },

  async usePasskey(db: Executor, id: string, counter: number, at: string): Promise<void> {
    await db.updateTable('factors').set({ counter, last_used: at }).where('id', '=', id).execute()
  },

  async byCredential(db: Executor, credentialId: string): Promise<FactorRow | undefined> {
    return db
      .selectFrom('factors')
      .selectAll()
      .where('credential_id', '=', credentialId)
      .executeTakeFirst()
  },

  async replaceCodes(db: Executor, login: string, hashes: string[]): Promise<void> {
    await db.deleteFrom('recovery_codes').where('login', '=', login).execute()
    if (hashes.length === 0) return
    await db
      .insertInto('recovery_codes')
      .values(hashes.map((code_hash) => ({ login, code_hash, used: null })))
      .execute()
  },

  /** Uses a recovery code once; false when it is not one of the person's unused codes. */
  async useCode(db: Executor, login: string, hash: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('recovery_codes')
      .set({ used: at })
      .where('login', '=', login)
      .where('code_hash', '=', hash)
      .where('used', 'is', null)
      .executeTakeFirst()
    return r.numUpdatedRows === 1n
  },

  async unusedCodes(db: Executor, login: string): Promise<string[]> {
    const rows = await db
      .selectFrom('recovery_codes')
      .select('code_hash')
      .where('login', '=', login)
      .where('used', 'is', null)
      .execute()
    return rows.map((r) => r.code_hash)
  },

  async addPending(
    db: Executor,
    row: { id_hash: string; login: string; next: string; expires: string },
  ): Promise<void> {
    await db.insertInto('pending_signins').values(row).execute()
  },

  async pending(db: Executor, idHash: string, at: string) {
    return db
      .selectFrom('pending_signins')
      .selectAll()
      .where('id_hash', '=', idHash)
      .where('expires', '>', at)
      .executeTakeFirst()
  },

  /** Ends a pending sign-in; false when another request ended it first. */
  async endPending(db: Executor, idHash: string): Promise<boolean> {
    const r = await db
      .deleteFrom('pending_signins')
      .where('id_hash', '=', idHash)
      .executeTakeFirst()
    return r.numDeletedRows === 1n
  },

  async addChallenge(
    db: Executor,
    row: { challenge: string; purpose: string; login: string | null; expires: string },
  ): Promise<void> {
    await db.insertInto('webauthn_challenges').values(row).execute()
  },

  /** Keeps the newest `keep` challenges of the purpose that belong to nobody; drops the rest. */
  async capAnonymousChallenges(db: Executor, purpose: string, keep: number): Promise<void> {
    const past = await db
      .selectFrom('webauthn_challenges')
      .select('challenge')
      .where('purpose', '=', purpose)
      .where('login', 'is', null)
      .orderBy('expires', 'desc')
      .limit(1000)
      .offset(keep)
      .execute()
    if (past.length === 0) return
    await db
      .deleteFrom('webauthn_challenges')
      .where(
        'challenge',
        'in',
        past.map((r) => r.challenge),
      )
      .execute()
  },

  /** Takes a challenge once: it is gone afterwards; undefined when unknown or expired. */
  async takeChallenge(db: Executor, challenge: string, purpose: string, at: string) {
    const row = await db
      .selectFrom('webauthn_challenges')
      .selectAll()
      .where('challenge', '=', challenge)
      .where('purpose', '=', purpose)
      .executeTakeFirst()
    if (row === undefined) return undefined
    const r = await db
      .deleteFrom('webauthn_challenges')
      .where('challenge', '=', challenge)
      .executeTakeFirst()
    if (r.numDeletedRows !== 1n || row.expires <= at) return undefined
    return row
  },

  async requires2fa(db: Executor, username: string): Promise<boolean> {
    const row = await db
      .selectFrom('account_policies')
      .select('require_2fa')
      .where('username', '=', username)
      .executeTakeFirst()
    return row?.require_2fa === 1
  },

  async setPolicy(db: Executor, username: string, require: boolean, at: string): Promise<void> {
    const value = require ? 1 : 0
    await db
      .insertInto('account_policies')
      .values({ username, require_2fa: value, changed: at })
      .onConflict((oc) => oc.column('username').doUpdateSet({ require_2fa: value, changed: at }))
      .execute()
  },

  /** Removes pending sign-ins and challenges that expired before `before`. */
  async prune(db: Executor, before: string): Promise<void> {
    await db.deleteFrom('pending_signins').where('expires', '<', before).execute()
    await db.deleteFrom('webauthn_challenges').where('expires', '<', before).execute()
  },
}
