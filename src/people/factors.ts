import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { generateSecret, generateURI, verify } from 'otplib'
import { renderSVG } from 'uqr'
import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { type FactorRow, factorsRepo } from '../db/factors.js'
import { isoTime } from '../time.js'
import type { Keyring } from '../tokens/keyring.js'
import { digest, secret } from './secrets.js'

/** A refusal shown next to its form; `last`: the last factor under a requiring policy. */
export class FactorError extends Error {
  constructor(
    message: string,
    readonly last = false,
  ) {
    super(message)
  }
}

export interface FactorView {
  id: string
  kind: 'totp' | 'passkey'
  name: string
  created: string
  lastUsed?: string
}

const minute = 60_000
export const pendingLifetimeMs = 5 * minute
const recoveryCodeCount = 10
const codeAlphabet = 'abcdefghjkmnpqrstuvwxyz23456789'
/** A code of the current 30-second window, the one before or the one after (clock skew). */
const tolerance: [number, number] = [30, 30]

/** `xxxxx-xxxxx` from an alphabet without look-alikes: about 49 bits each. */
function recoveryCode(): string {
  const bytes = randomBytes(10)
  let text = ''
  for (const b of bytes) text += codeAlphabet[b % codeAlphabet.length]
  return `${text.slice(0, 5)}-${text.slice(5)}`
}
const normalCode = (code: string) => code.trim().toLowerCase().replace(/[\s-]/g, '')

/**
 * Second factors: authenticator apps (TOTP, RFC 6238), passkeys, recovery codes, the sign-ins
 * that wait for one, and an account's policy. TOTP secrets are encrypted (AES-256-GCM) with a
 * key derived from a signing key, which is never in the database; each ciphertext names its
 * signing key, and a code accepted re-encrypts under the current one.
 */
export class FactorService {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly now: () => number,
    /** DASHBOARD_REQUIRE_2FA: every member of every account. */
    private readonly requiredEverywhere: boolean,
  ) {}

  private event(
    action: AuditEvent['action'],
    actor: Actor,
    username: string,
    details?: Record<string, unknown>,
  ): AuditEvent {
    const target = { type: 'member' as const, id: actor.login }
    return auditEvent(this.now(), action, actor, target, username, details)
  }

  private key(id: string): Buffer {
    const signing = this.keyring.get(id)
    if (signing === undefined)
      throw new FactorError('This authenticator app can no longer be read.')
    return Buffer.from(hkdfSync('sha256', signing.secret, 'tessera-factors', id, 32))
  }

  private seal(plain: string): string {
    const { id } = this.keyring.current
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key(id), iv)
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    const parts = [iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url'))
    return `v1.${id}.${parts.join('.')}`
  }

  private open(sealed: string): string {
    const [version, id, iv, tag, body] = sealed.split('.')
    if (version !== 'v1' || !id || !iv || !tag || body === undefined) {
      throw new FactorError('This authenticator app can no longer be read.')
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key(id), Buffer.from(iv, 'base64url'))
    decipher.setAuthTag(Buffer.from(tag, 'base64url'))
    return Buffer.concat([
      decipher.update(Buffer.from(body, 'base64url')),
      decipher.final(),
    ]).toString('utf8')
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

  /**
   * Begins enrolling an authenticator app: a new secret (an earlier unconfirmed one is
   * dropped), as text, as an otpauth URI and as a QR code (SVG).
   */
  async startTotp(login: string): Promise<{ secret: string; uri: string; svg: string }> {
    const plain = generateSecret()
    const uri = generateURI({ issuer: 'Tessera', label: login, secret: plain })
    await this.db.transaction().execute(async (trx) => {
      await factorsRepo.dropUnconfirmed(trx, login)
      await factorsRepo.insert(trx, {
        ...blankFactor,
        id: `f_${secret().slice(0, 22)}`,
        login,
        kind: 'totp',
        name: 'Authenticator app',
        secret: this.seal(plain),
        confirmed: 0,
        created: isoTime(this.now()),
      })
    })
    return { secret: plain, uri, svg: renderSVG(uri) }
  }

  /** The secret of the app being enrolled, to show it again with a refused code. */
  async pendingTotp(
    login: string,
  ): Promise<{ secret: string; uri: string; svg: string } | undefined> {
    const row = (await factorsRepo.ofPerson(this.db, login)).find(
      (r) => r.kind === 'totp' && r.confirmed === 0,
    )
    if (row?.secret == null) return undefined
    const plain = this.open(row.secret)
    const uri = generateURI({ issuer: 'Tessera', label: login, secret: plain })
    return { secret: plain, uri, svg: renderSVG(uri) }
  }

  /**
   * Confirms the app being enrolled with its first code; answers the new recovery codes when
   * the person had none (shown once).
   */
  async confirmTotp(
    login: string,
    code: string,
    actor: Actor,
    username: string,
  ): Promise<string[] | undefined> {
    const row = (await factorsRepo.ofPerson(this.db, login)).find(
      (r) => r.kind === 'totp' && r.confirmed === 0,
    )
    if (row === undefined)
      throw new FactorError('Start again: no authenticator app is being set up.')
    if (!(await this.takeTotp(row, code))) {
      throw new FactorError('That code is not right. Enter the code the app shows now.')
    }
    const hadCodes = (await factorsRepo.unusedCodes(this.db, login)).length > 0
    const codes = hadCodes ? undefined : Array.from({ length: recoveryCodeCount }, recoveryCode)
    await this.db.transaction().execute(async (trx) => {
      // Only one authenticator app: a newer one replaces the one before.
      for (const other of await factorsRepo.ofPerson(trx, login)) {
        if (other.kind === 'totp' && other.id !== row.id)
          await factorsRepo.remove(trx, login, other.id)
      }
      if (codes !== undefined) await factorsRepo.replaceCodes(trx, login, codes.map(hashCode))
      await auditRepo.insert(trx, this.event('factor.added', actor, username, { kind: 'totp' }))
    })
    return codes
  }

  /** A TOTP code for the factor, once: its step must be later than the last one taken. */
  private async takeTotp(row: FactorRow, code: string): Promise<boolean> {
    const token = code.replace(/\s/g, '')
    if (!/^\d{6}$/.test(token) || row.secret === null) return false
    const plain = this.open(row.secret)
    const result = await verify({
      secret: plain,
      token,
      epoch: Math.floor(this.now() / 1000),
      epochTolerance: tolerance,
      afterTimeStep: Number(row.last_step),
    })
    if (!result.valid || !('timeStep' in result)) return false
    // Re-encrypted under the current signing key at every use.
    const at = isoTime(this.now())
    return factorsRepo.takeStep(this.db, row.id, result.timeStep, at, this.seal(plain))
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
    const rows = await factorsRepo.ofPerson(this.db, login)
    for (const row of rows) {
      if (row.kind === 'totp' && row.confirmed === 1 && (await this.takeTotp(row, code))) {
        return 'totp'
      }
    }
    const normal = normalCode(code)
    if (normal.length !== 10) return undefined
    const used = await this.db.transaction().execute(async (trx) => {
      if (!(await factorsRepo.useCode(trx, login, digest(normal), isoTime(this.now())))) {
        return false
      }
      const left = (await factorsRepo.unusedCodes(trx, login)).length
      await auditRepo.insert(trx, this.event('recovery_code.used', actor, username, { left }))
      return true
    })
    return used ? 'recovery' : undefined
  }

  /** Ten new recovery codes, shown once; the earlier set stops working. */
  async newRecoveryCodes(login: string, actor: Actor, username: string): Promise<string[]> {
    const codes = Array.from({ length: recoveryCodeCount }, recoveryCode)
    await this.db.transaction().execute(async (trx) => {
      await factorsRepo.replaceCodes(trx, login, codes.map(hashCode))
      await auditRepo.insert(trx, this.event('recovery_codes.generated', actor, username))
    })
    return codes
  }

  async recoveryCodesLeft(login: string): Promise<number> {
    return (await factorsRepo.unusedCodes(this.db, login)).length
  }

  /** Whether every one of `codes` is an unused recovery code of the person (the download). */
  async areCodesOf(login: string, codes: string[]): Promise<boolean> {
    const unused = new Set(await factorsRepo.unusedCodes(this.db, login))
    return codes.length > 0 && codes.every((c) => unused.has(hashCode(c)))
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
      if (row === undefined) throw new FactorError('There is no such sign-in method.')
      if (required && rows.length === 1) {
        throw new FactorError(
          'Your account requires a second factor: add another before you remove this one.',
          true,
        )
      }
      await factorsRepo.remove(trx, login, id)
      if (rows.length === 1) await factorsRepo.replaceCodes(trx, login, [])
      await auditRepo.insert(
        trx,
        this.event('factor.removed', actor, username, { kind: row.kind, name: row.name }),
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

const hashCode = (code: string) => digest(normalCode(code))

const blankFactor: FactorRow = {
  id: '',
  login: '',
  kind: '',
  name: '',
  secret: null,
  last_step: 0,
  credential_id: null,
  public_key: null,
  counter: 0,
  transports: null,
  confirmed: 1,
  created: '',
  last_used: null,
}
