import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { newPerson, type PortalLinkRow, peopleRepo } from '../db/people.js'
import { ApiError } from '../errors.js'
import { isoTime } from '../time.js'
import {
  accountTarget,
  freeLogin,
  join,
  lockAccount,
  memberTarget,
  newJoinLink,
  type PeopleDeps,
} from './membership.js'
import type { Role } from './roles.js'
import { digest } from './secrets.js'

export const portalLinkLifetimeMs = 5 * 60_000

/**
 * Portal links: a platform that vouches for a person sends them into an account with a role,
 * signed in, through a one-time link that lives minutes.
 */
export class PortalLinkService {
  constructor(
    private readonly deps: PeopleDeps,
    private readonly returnOrigins: readonly string[],
  ) {}

  /** A one-time portal link for a person the platform vouches for: its secret and expiry. */
  async create(
    username: string,
    input: { email: unknown; name?: unknown; role: unknown; returnUrl?: unknown },
    actor: Actor,
  ): Promise<{ secret: string; expires: string }> {
    const { link, idHash, email, role } = await newJoinLink(this.deps, username, input)
    const name = input.name === undefined ? null : String(input.name).trim().slice(0, 128) || null
    const returnUrl = input.returnUrl === undefined ? null : this.checkReturnUrl(input.returnUrl)
    const now = this.deps.now()
    const expires = isoTime(now + portalLinkLifetimeMs)
    const target = { type: 'portal_link' as const, id: idHash.slice(0, 16) }
    const event = auditEvent(now, 'portal_link.created', actor, target, username, { email, role })
    await this.deps.db.transaction().execute(async (trx) => {
      await peopleRepo.addPortalLink(trx, {
        id_hash: idHash,
        username,
        email,
        name,
        role,
        return_url: returnUrl,
        created: isoTime(now),
        expires,
        used: null,
      })
      await auditRepo.insert(trx, event)
    })
    return { secret: link, expires }
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
      !this.returnOrigins.includes(url.origin)
    ) {
      throw new ApiError(
        'memberInvalid',
        'returnUrl must be an https URL on an origin listed in PORTAL_RETURN_ORIGINS',
      )
    }
    return url.href
  }

  /** What a portal link leads to; `returnUrl` also for a used one (the page's way back). */
  async lookup(link: string) {
    const row = await peopleRepo.portalLink(this.deps.db, digest(link))
    if (row === undefined) return { state: 'gone' as const }
    const open = row.used === null && row.expires > isoTime(this.deps.now())
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
  async use(
    link: string,
    actor: Actor,
  ): Promise<{ login: string; username: string; returnUrl: string | null } | undefined> {
    const row = await peopleRepo.portalLink(this.deps.db, digest(link))
    if (row === undefined) return undefined
    const account = await this.deps.accounts.find(row.username)
    if (account === undefined || account.disabled) return undefined
    const at = isoTime(this.deps.now())
    let login = ''
    const used = await this.deps.db.transaction().execute(async (trx) => {
      if (!(await peopleRepo.usePortalLink(trx, row.id_hash, at))) return false
      await lockAccount(trx, row.username)
      login = await this.admit(trx, row, at, actor)
      const who = { ...actor, login, method: 'link' as const }
      const target = accountTarget(row.username)
      await auditRepo.insert(
        trx,
        auditEvent(this.deps.now(), 'signin.succeeded', who, target, row.username),
      )
      return true
    })
    return used ? { login, username: row.username, returnUrl: row.return_url } : undefined
  }

  /** The link's person, found by email in its account or made, with the link's role there. */
  private async admit(trx: Db, row: PortalLinkRow, at: string, actor: Actor): Promise<string> {
    const known = (await peopleRepo.memberByEmail(trx, row.username, row.email))?.login
    const login = known ?? (await freeLogin(trx, row.email))
    if (known === undefined) {
      const proven = { email: row.email, email_proof: 'portal', name: row.name }
      await peopleRepo.insertPerson(trx, newPerson(login, at, proven))
    } else if (row.name !== null) {
      await peopleRepo.updatePerson(trx, login, { name: row.name })
    }
    const before = await peopleRepo.membership(trx, row.username, login)
    await join(trx, row.username, login, row.role as Role, at)
    if (before?.role !== row.role) {
      const action = before === undefined ? 'member.added' : 'member.role_changed'
      const details = { role: row.role, via: 'portal_link' }
      const who = { ...actor, login, method: 'link' as const }
      await auditRepo.insert(
        trx,
        auditEvent(this.deps.now(), action, who, memberTarget(login), row.username, details),
      )
    }
    return login
  }
}
