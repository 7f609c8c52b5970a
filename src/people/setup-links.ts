import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { holdersRepo } from '../db/holders.js'
import { peopleRepo } from '../db/people.js'
import { ApiError } from '../errors.js'
import { isoTime } from '../time.js'
import { accountTarget, type PeopleDeps } from './membership.js'
import { checkNewPassword, hashPassword } from './passwords.js'
import { digest, secret } from './secrets.js'

export const setupLinkLifetimeMs = 24 * 60 * 60_000

/** One-time links from an operator that set an account holder's password (a first one or a reset). */
export class SetupLinkService {
  constructor(private readonly deps: PeopleDeps) {}

  /** A new setup link secret for an existing account; earlier links stop working. */
  async issue(username: string, actor: Actor): Promise<string> {
    const link = secret()
    const now = this.deps.now()
    await this.deps.db.transaction().execute(async (trx) => {
      await holdersRepo.endLinks(trx, username, isoTime(now))
      await holdersRepo.addLink(trx, {
        idHash: digest(link),
        username,
        created: isoTime(now),
        expires: isoTime(now + setupLinkLifetimeMs),
      })
      const event = auditEvent(
        this.deps.now(),
        'account.invited',
        actor,
        accountTarget(username),
        username,
      )
      await auditRepo.insert(trx, event)
    })
    return link
  }

  /** Whether a setup link can still set a password, and whose it is; 'unknown': never issued. */
  async lookup(link: string): Promise<{ state: 'open' | 'gone' | 'unknown'; username: string }> {
    const row = await holdersRepo.link(this.deps.db, digest(link))
    if (row === undefined) return { state: 'unknown', username: '' }
    const open = row.ended === null && row.expires > isoTime(this.deps.now())
    return { state: open ? 'open' : 'gone', username: row.username }
  }

  /** Uses a setup link: sets the password and ends every session (it is also a reset). */
  async complete(link: string, password: string, confirm: string, actor: Actor): Promise<string> {
    checkNewPassword(password, confirm)
    const row = await holdersRepo.link(this.deps.db, digest(link))
    if (row === undefined) throw new ApiError('linkUnknown', 'This link is not valid.')
    const hash = await hashPassword(password)
    const at = isoTime(this.deps.now())
    await this.deps.db.transaction().execute(async (trx) => {
      if (!(await holdersRepo.useLink(trx, row.id_hash, at))) {
        throw new ApiError('linkGone', 'This link has been used or has expired.')
      }
      // The link is the operator's word: the holder (login = username) is an owner again.
      await peopleRepo.ensureHolder(trx, row.username, at)
      await holdersRepo.setPassword(trx, row.username, hash, at)
      await holdersRepo.endPersonSessions(trx, row.username)
      const who = { ...actor, login: row.username }
      const target = accountTarget(row.username)
      await auditRepo.insert(
        trx,
        auditEvent(this.deps.now(), 'password.set', who, target, row.username),
      )
    })
    return row.username
  }
}
