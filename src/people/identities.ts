import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { newPerson, type PersonRow, peopleRepo } from '../db/people.js'
import { isoTime } from '../time.js'
import { freeLogin, join, memberTarget, normalEmail, type PeopleDeps } from './membership.js'
import type { Identity } from './oidc.js'
import type { Role } from './roles.js'

/**
 * Single sign-on: the person the provider's identity is linked to; or, at their first SSO
 * sign-in with a verified email, the person whose same email was proven (by a provider or a
 * portal link; never one typed when accepting an invitation), or a new person for the open
 * invitations to this email (they join those accounts). The identity is then linked, and the
 * email no longer matters. Undefined: nobody to sign in.
 */
export async function personOfIdentity(
  deps: PeopleDeps,
  identity: Identity,
  actor: Actor,
): Promise<PersonRow | undefined> {
  const linked = await peopleRepo.byIdentity(deps.db, identity.issuer, identity.subject)
  if (linked !== undefined) return linked
  const email = normalEmail(identity.email)
  if (email === undefined || !identity.emailVerified) return undefined
  const link = { oidc_issuer: identity.issuer, oidc_subject: identity.subject }
  return deps.db.transaction().execute(async (trx) => {
    const candidates = (await peopleRepo.byEmail(trx, email)).filter((p) => p.email_proof !== null)
    const person = candidates.find((p) => p.oidc_subject === null)
    if (person !== undefined) {
      const linked = { ...link, email_proof: 'sso' }
      await peopleRepo.updatePerson(trx, person.login, linked)
      return { ...person, ...linked }
    }
    if (candidates.length > 0) return undefined
    return invitedPerson(deps, trx, { ...identity, email }, actor)
  })
}

/** A new person for the open invitations to the identity's email, who joins those accounts. */
async function invitedPerson(
  deps: PeopleDeps,
  trx: Db,
  identity: Identity & { email: string },
  actor: Actor,
): Promise<PersonRow | undefined> {
  const { email } = identity
  const at = isoTime(deps.now())
  const invitations = await peopleRepo.openInvitationsFor(trx, email, at)
  if (invitations.length === 0) return undefined
  const login = await freeLogin(trx, email)
  const name = identity.name?.trim().slice(0, 128) || null
  const link = { oidc_issuer: identity.issuer, oidc_subject: identity.subject }
  const created = newPerson(login, at, { email, email_proof: 'sso', name, ...link })
  await peopleRepo.insertPerson(trx, created)
  const who = { ...actor, login, method: 'sso' as const }
  for (const invitation of invitations) {
    await peopleRepo.endInvitation(trx, invitation.id_hash, at)
    await join(trx, invitation.username, login, invitation.role as Role, at)
    const details = { role: invitation.role, via: 'invitation' }
    await auditRepo.insert(
      trx,
      auditEvent(
        deps.now(),
        'member.added',
        who,
        memberTarget(login),
        invitation.username,
        details,
      ),
    )
  }
  return created
}

/** Whether someone has this email without proof (they joined by invitation with a password). */
export async function emailUnproven(db: Db, email: unknown): Promise<boolean> {
  const normal = normalEmail(email)
  if (normal === undefined) return false
  return (await peopleRepo.byEmail(db, normal)).some((p) => p.email_proof === null)
}

/** Open sign-up through single sign-on: a new account whose owner is the new person. */
export async function signUpWithIdentity(
  deps: PeopleDeps,
  identity: Identity,
  actor: Actor,
): Promise<PersonRow | undefined> {
  const email = normalEmail(identity.email)
  if (email === undefined || !identity.emailVerified) return undefined
  const username = await freeLogin(deps.db, email)
  await deps.accounts.create(username, undefined, [], actor, async (trx) => {
    await peopleRepo.updatePerson(trx, username, {
      email,
      email_proof: 'sso',
      name: identity.name?.slice(0, 128) ?? null,
      oidc_issuer: identity.issuer,
      oidc_subject: identity.subject,
    })
  })
  return peopleRepo.person(deps.db, username)
}
