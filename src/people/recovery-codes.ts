import { randomBytes } from 'node:crypto'
import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { factorsRepo } from '../db/factors.js'
import { isoTime } from '../time.js'
import { digest } from './secrets.js'

const recoveryCodeCount = 10
const codeAlphabet = 'abcdefghjkmnpqrstuvwxyz23456789'

/** `xxxxx-xxxxx` from an alphabet without look-alikes: about 49 bits each. */
function recoveryCode(): string {
  const bytes = randomBytes(10)
  let text = ''
  for (const b of bytes) text += codeAlphabet[b % codeAlphabet.length]
  return `${text.slice(0, 5)}-${text.slice(5)}`
}

const normalCode = (code: string) => code.trim().toLowerCase().replace(/[\s-]/g, '')
/** How a recovery code is stored: the hash of its normal form, so spacing and case never matter. */
export const hashCode = (code: string) => digest(normalCode(code))
/** A new set of recovery codes, to be shown once. */
export const newCodes = () => Array.from({ length: recoveryCodeCount }, recoveryCode)

/** Recovery codes: the way in when the authenticator app and passkeys are lost. */
export class RecoveryCodeService {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  /** Ten new recovery codes, shown once; the earlier set stops working. */
  async replace(login: string, actor: Actor, username: string): Promise<string[]> {
    const codes = newCodes()
    await this.db.transaction().execute(async (trx) => {
      await factorsRepo.replaceCodes(trx, login, codes.map(hashCode))
      const target = { type: 'member' as const, id: actor.login }
      const event = auditEvent(this.now(), 'recovery_codes.generated', actor, target, username)
      await auditRepo.insert(trx, event)
    })
    return codes
  }

  /** Uses a recovery code, once; recorded in the account signed into. */
  async use(login: string, code: string, actor: Actor, username: string): Promise<boolean> {
    const normal = normalCode(code)
    if (normal.length !== 10) return false
    return this.db.transaction().execute(async (trx) => {
      if (!(await factorsRepo.useCode(trx, login, digest(normal), isoTime(this.now())))) {
        return false
      }
      const left = (await factorsRepo.unusedCodes(trx, login)).length
      const target = { type: 'member' as const, id: actor.login }
      const event = auditEvent(this.now(), 'recovery_code.used', actor, target, username, { left })
      await auditRepo.insert(trx, event)
      return true
    })
  }

  async left(login: string): Promise<number> {
    return (await factorsRepo.unusedCodes(this.db, login)).length
  }

  /** Whether every one of `codes` is an unused recovery code of the person (the download). */
  async areCodesOf(login: string, codes: string[]): Promise<boolean> {
    const unused = new Set(await factorsRepo.unusedCodes(this.db, login))
    return codes.length > 0 && codes.every((c) => unused.has(hashCode(c)))
  }
}
