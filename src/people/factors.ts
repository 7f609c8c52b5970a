import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { factorsRepo } from '../db/factors.js'
import { ApiError } from '../errors.js'
import { isoTime } from '../time.js'
import type { Keyring } from '../tokens/keyring.js'
import { RecoveryCodeService } from './recovery-codes.js'
import { digest, secret } from './secrets.js'
import { TotpService } from './totp.js'

export interface FactorView {
  id: string
  kind: 'totp' | 'passkey'
  name: string
  created: string
  lastUsed?: string
}

const minute = 60_000
export const pendingLifetimeMs = 5 * minute

/**
 * Second factors: authenticator apps and recovery codes (in their own modules, reached through
 * this one service), passkeys as listed factors, the sign-ins that wait for one, and an
 * account's policy.
 */
export class FactorService {
  private readonly totp: TotpService
  private readonly recoveryCodes: RecoveryCodeService

  constructor(
    private readonly db: Db,
    keyring: Keyring,
    private readonly now: () => number,
    /** DASHBOARD_REQUIRE_2FA: every member of every account. */
    private readonly requiredEverywhere: boolean,
  ) {
    this.totp = new TotpService(db, keyring, now)
    this.recoveryCodes = new RecoveryCodeService(db, now)
  }

  async list(login: string): Promise<FactorView[]> {
    const rows = await factorsRepo.ofPerson(this.db, login)
    return rows
      .filter((r) => r.confirmed === 1)
      .map((r) => {
        const view: FactorView = {
          id: r.id,
          kind: r.kind as FactorView['kind'],
          name: r.name,
          created: r.created,
        }
        if (r.last_used !== null) view.lastUsed = r.last_used
        return view
      })
  }

  async has(login: string): Promise<boolean> {
    return factorsRepo.has(this.db, login)
  }

  /** Whether the account (or the service) requires a second factor of its members. */
  async required(username: string): Promise<boolean> {
    return this.requiredEverywhere || (await factorsRepo.requires2fa(this.db, username))
  }

  async accountRequires(username: string): Promise<boolean> {
    return factorsRepo.requires2fa(this.db, username)
  }

  get requiredByOperator(): boolean {
    return this.requiredEverywhere
  }

  async setPolicy(username: string, require: boolean, actor: Actor): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await factorsRepo.setPolicy(trx, username, require, isoTime(this.now()))
      const target = { type: 'account' as const, id: username }
      const event = auditEvent(this.now(), 'policy.changed', actor, target, username, {
        require2fa: require,
      })
      await auditRepo.insert(trx, event)
    })
  }

  startTotp(login: string) {
    return this.totp.start(login)
  }

  pendingTotp(login: string) {
    return this.totp.pending(login)
  }

  confirmTotp(login: string, code: string, actor: Actor, username: string) {
    return this.totp.confirm(login, code, actor, username)
  }

  /**
   * The second step of a sign-in: an authenticator code or a recovery code. Answers which one
   * was right, or undefined. A recovery code used is audited in the account signed into.
   */
  async check(
    login: string,
    code: string,
    actor: Actor,
    username: string,
  ): Promise<'totp' | 'recovery' | undefined> {
    if (await this.totp.check(login, code)) return 'totp'
    return (await this.recoveryCodes.use(login, code, actor, username)) ? 'recovery' : undefined
  }

  newRecoveryCodes(login: string, actor: Actor, username: string) {
    return this.recoveryCodes.replace(login, actor, username)
  }

  recoveryCodesLeft(login: string) {
    return this.recoveryCodes.left(login)
  }

  areCodesOf(login: string, codes: string[]) {
    return this.recoveryCodes.areCodesOf(login, codes)
  }

  /**
   * Removes a factor. Refused for the last one while a policy requires one (`required`);
   * with it go the recovery codes, when no factor is left.
   */
  async remove(
    login: string,
    id: string,
    actor: Actor,
    username: string,
    required: boolean,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const rows = (await factorsRepo.ofPerson(trx, login)).filter((r) => r.confirmed === 1)
      const row = rows.find((r) => r.id === id)
      if (row === undefined) throw new ApiError('noSuchFactor', 'There is no such sign-in method.')
      if (required && rows.length === 1) {
        throw new ApiError(
          'lastFactor',
          'Your account requires a second factor: add another before you remove this one.',
        )
      }
      await factorsRepo.remove(trx, login, id)
      if (rows.length === 1) await factorsRepo.replaceCodes(trx, login, [])
      const target = { type: 'member' as const, id: actor.login }
      const details = { kind: row.kind, name: row.name }
      await auditRepo.insert(
        trx,
        auditEvent(this.now(), 'factor.removed', actor, target, username, details),
      )
    })
  }

  /** A password that was right, waiting for its second factor: the secret for the cookie. */
  async beginPending(login: string, next: string): Promise<string> {
    const id = secret()
    await factorsRepo.addPending(this.db, {
      id_hash: digest(id),
      login,
      next,
      expires: isoTime(this.now() + pendingLifetimeMs),
    })
    return id
  }

  async pending(id: string): Promise<{ login: string; next: string } | undefined> {
    const row = await factorsRepo.pending(this.db, digest(id), isoTime(this.now()))
    return row === undefined ? undefined : { login: row.login, next: row.next }
  }

  /** Ends the pending sign-in; false when another request ended it first. */
  async finishPending(id: string): Promise<boolean> {
    return factorsRepo.endPending(this.db, digest(id))
  }

  async prune(): Promise<void> {
    await factorsRepo.prune(this.db, isoTime(this.now() - 60 * minute))
  }
}
