import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { generateSecret, generateURI, verify } from 'otplib'
import { renderSVG } from 'uqr'
import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { type FactorRow, factorsRepo } from '../db/factors.js'
import { ApiError } from '../errors.js'
import { isoTime } from '../time.js'
import type { Keyring } from '../tokens/keyring.js'
import { hashCode, newCodes } from './recovery-codes.js'
import { secret } from './secrets.js'

/** A code of the current 30-second window, the one before or the one after (clock skew). */
const tolerance: [number, number] = [30, 30]

/** An authenticator app being enrolled: its secret as text, as a URI and as a QR code (SVG). */
export interface TotpEnrolment {
  secret: string
  uri: string
  svg: string
}

const enrolment = (login: string, plain: string): TotpEnrolment => {
  const uri = generateURI({ issuer: 'Tessera', label: login, secret: plain })
  return { secret: plain, uri, svg: renderSVG(uri) }
}

/**
 * Authenticator apps (TOTP, RFC 6238). Their secrets are encrypted (AES-256-GCM) with a key
 * derived from a signing key, which is never in the database; each ciphertext names its
 * signing key, and a code accepted re-encrypts under the current one.
 */
export class TotpService {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly now: () => number,
  ) {}

  private key(id: string): Buffer {
    const signing = this.keyring.get(id)
    if (signing === undefined)
      throw new ApiError('totpRefused', 'This authenticator app can no longer be read.')
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
      throw new ApiError('totpRefused', 'This authenticator app can no longer be read.')
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key(id), Buffer.from(iv, 'base64url'))
    decipher.setAuthTag(Buffer.from(tag, 'base64url'))
    return Buffer.concat([
      decipher.update(Buffer.from(body, 'base64url')),
      decipher.final(),
    ]).toString('utf8')
  }

  /** Begins enrolling an app: a new secret (an earlier unconfirmed one is dropped). */
  async start(login: string): Promise<TotpEnrolment> {
    const plain = generateSecret()
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
    return enrolment(login, plain)
  }

  private async enrolling(db: Db, login: string): Promise<FactorRow | undefined> {
    const rows = await factorsRepo.ofPerson(db, login)
    return rows.find((r) => r.kind === 'totp' && r.confirmed === 0)
  }

  /** The secret of the app being enrolled, to show it again with a refused code. */
  async pending(login: string): Promise<TotpEnrolment | undefined> {
    const row = await this.enrolling(this.db, login)
    if (row?.secret == null) return undefined
    return enrolment(login, this.open(row.secret))
  }

  /**
   * Confirms the app being enrolled with its first code; answers the new recovery codes when
   * the person had none (shown once).
   */
  async confirm(
    login: string,
    code: string,
    actor: Actor,
    username: string,
  ): Promise<string[] | undefined> {
    const row = await this.enrolling(this.db, login)
    if (row === undefined)
      throw new ApiError('totpRefused', 'Start again: no authenticator app is being set up.')
    if (!(await this.take(row, code))) {
      throw new ApiError('totpRefused', 'That code is not right. Enter the code the app shows now.')
    }
    const hadCodes = (await factorsRepo.unusedCodes(this.db, login)).length > 0
    const codes = hadCodes ? undefined : newCodes()
    await this.db.transaction().execute(async (trx) => {
      // Only one authenticator app: a newer one replaces the one before.
      for (const other of await factorsRepo.ofPerson(trx, login)) {
        if (other.kind === 'totp' && other.id !== row.id)
          await factorsRepo.remove(trx, login, other.id)
      }
      if (codes !== undefined) await factorsRepo.replaceCodes(trx, login, codes.map(hashCode))
      const target = { type: 'member' as const, id: actor.login }
      const details = { kind: 'totp' }
      await auditRepo.insert(
        trx,
        auditEvent(this.now(), 'factor.added', actor, target, username, details),
      )
    })
    return codes
  }

  /** Whether the code is one of the person's confirmed apps, taken once. */
  async check(login: string, code: string): Promise<boolean> {
    for (const row of await factorsRepo.ofPerson(this.db, login)) {
      if (row.kind === 'totp' && row.confirmed === 1 && (await this.take(row, code))) return true
    }
    return false
  }

  /** A TOTP code for the factor, once: its step must be later than the last one taken. */
  private async take(row: FactorRow, code: string): Promise<boolean> {
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
}

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
