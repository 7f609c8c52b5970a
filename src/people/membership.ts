import type { AccountService } from '../accounts/service.js'
import type { Db } from '../db/database.js'
import { peopleRepo } from '../db/people.js'
import { accountsRepo } from '../db/repositories.js'
import { ApiError } from '../errors.js'
import type { Mailer } from '../mail/mailer.js'
import { checkRole, type Role } from './roles.js'
import { digest, secret } from './secrets.js'

/** What the services of people share: the database, the accounts and the clock. */
export interface PeopleDeps {
  db: Db
  accounts: AccountService
  now: () => number
  /** SMTP_URL's mailer: invitations are mailed too; none, and they are only shown. */
  mailer?: Mailer
}

export const memberTarget = (login: string) => ({ type: 'member' as const, id: login })
export const accountTarget = (username: string) => ({ type: 'account' as const, id: username })

const emailPattern = /^[^\s@<>()",;:\\[\]]{1,64}@[^\s@<>()",;:\\[\]]+\.[^\s@<>()",;:\\[\]]+$/

/** An email address as stored: trimmed, lowercased; undefined when it is not one. */
export function normalEmail(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const email = value.trim().toLowerCase()
  return email.length <= 254 && emailPattern.test(email) ? email : undefined
}

/**
 * The start of every link that lets someone join an account (an invitation, a portal link):
 * the account exists, the email and role hold, and a new secret whose hash is stored.
 */
export async function newJoinLink(
  deps: PeopleDeps,
  username: string,
  input: { email: unknown; role: unknown },
) {
  await deps.accounts.get(username)
  const email = normalEmail(input.email)
  if (email === undefined) throw new ApiError('memberInvalid', 'email must be an email address')
  const role = checkRole(input.role)
  const link = secret()
  return { link, idHash: digest(link), email, role }
}

/** Adds the membership, or sets its role when the person already belongs. */
export async function join(trx: Db, username: string, login: string, role: Role, at: string) {
  if ((await peopleRepo.membership(trx, username, login)) === undefined) {
    await peopleRepo.addMembership(trx, { username, login, role, created: at })
  } else if (await peopleRepo.setRole(trx, username, login, role)) {
    await keepAnOwner(trx, username)
  }
}

export async function keepAnOwner(trx: Db, username: string) {
  if ((await peopleRepo.owners(trx, username)) === 0) {
    throw new ApiError('lastOwner', 'an account must keep at least one owner')
  }
}

/** The account's row lock, held while its members change: see accountsRepo.lock. */
export const lockAccount = (trx: Db, username: string) => accountsRepo.lock(trx, username)

/** Whether a person or an account has this name: they share one namespace. */
export async function loginTaken(db: Db, login: string): Promise<boolean> {
  return (
    (await peopleRepo.person(db, login)) !== undefined ||
    (await accountsRepo.find(db, login)) !== undefined
  )
}

/** A login for a person made from an email: its local part, numbered when taken. */
export async function freeLogin(db: Db, email: string): Promise<string> {
  const local = email.split('@')[0] ?? ''
  const base =
    local
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, '-')
      .replace(/^[-_]+|[-_]+$/g, '')
      .slice(0, 24) || 'member'
  for (let n = 1; n < 50; n++) {
    const login = n === 1 ? base : `${base}-${n}`
    if (!(await loginTaken(db, login))) return login
  }
  return `${base.slice(0, 20)}-${secret()
    .slice(0, 8)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '0')}`
}

/** The enabled accounts the person belongs to, by username. */
export async function openAccountsOf(deps: PeopleDeps, login: string): Promise<string[]> {
  const memberships = await peopleRepo.membershipsOf(deps.db, login)
  const open: string[] = []
  for (const m of memberships) {
    const account = await deps.accounts.find(m.username)
    if (account !== undefined && !account.disabled) open.push(account.username)
  }
  return open
}
