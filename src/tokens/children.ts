import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { creditsRepo } from '../db/credits.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, tokensRepo } from '../db/repositories.js'
import type { TokenRecord, TokenView } from '../db/token-document.js'
import { familyRepo } from '../db/token-family.js'
import { fail } from '../errors.js'
import { childBounds } from './bounds.js'
import { currentPrincipal, type TokenFields } from './creation.js'
import { ancestorsOf } from './family.js'
import { holdNew, policyOf } from './policy.js'
import type { Principal } from './principal.js'
import type { TokenRecords } from './records.js'
import {
  creationRefusal,
  normalizeAllowedIps,
  normalizeAllowedUrls,
  normalizeExpiresAt,
  normalizeRatelimits,
} from './rules.js'

/** A child's create: a create's fields, and the credits it is given out of its parent's. */
export interface ChildFields extends TokenFields {
  credits?: number
}

/**
 * Makes a child token under `parentId` (docs/machines.md): authorized as a create (an sk with
 * tokens:write, not a retiring string), its scopes held by the authorizing token too, and never
 * wider than its parent or any ancestor (childBounds). In one transaction with the parent's row
 * locked, so that the parent's deletion, roll or narrowing and this create never act on what
 * the other is changing: a child made after its parent's cascade read would outlive it.
 */
export async function createChild(
  records: TokenRecords,
  account: AccountRecord,
  authorizer: Principal,
  parentId: string,
  input: ChildFields,
  actor: Actor,
  depthLimit: number,
  carve: CarveCredits,
): Promise<TokenView> {
  const refused = creationRefusal(authorizer, false)
  if (refused !== undefined) throw refused
  const principal = await currentPrincipal(records, authorizer)
  const again = creationRefusal(principal, false)
  if (again !== undefined) throw again
  if (principal.child && principal.tokenId !== undefined) {
    await records.refuseOutsideFamily(parentId, principal.tokenId)
  }
  const now = records.now()
  const asked = {
    scopes: records.checkScopes(account, principal, input.scopes ?? []),
    allowedUrls:
      input.allowedUrls === undefined ? undefined : normalizeAllowedUrls(input.allowedUrls),
    allowedIps: input.allowedIps === undefined ? undefined : normalizeAllowedIps(input.allowedIps),
    expiresAt: normalizeExpiresAt(input.expiresAt, now),
    ratelimits: normalizeRatelimits(input.ratelimits),
  }
  if (input.expiresAt === null) asked.expiresAt = undefined
  const record = await records.db.transaction().execute(async (trx) => {
    const parent = await familyRepo.lock(trx, parentId)
    if (parent === undefined || parent.username !== account.username) {
      return fail('notFound', 'no token with this id in this account')
    }
    if (parent.retiresAt !== undefined) {
      fail(
        'tokenRetiring',
        'a rolled token has no new children: make them under the token that replaced it',
      )
    }
    if (parent.expiresAt != null && parent.expiresAt <= now) {
      fail('notFound', 'the parent token has reached its expiresAt')
    }
    const ancestors = [parent, ...(await ancestorsOf(trx, parent))]
    if (ancestors.length > depthLimit) {
      fail(
        'invalidResources',
        `a token may have at most ${depthLimit} levels of children; this one is ${ancestors.length - 1} below the first`,
      )
    }
    const bounds = childBounds(asked, ancestors)
    const child: TokenRecord = {
      ...records.newRecord(account, { note: input.note ?? '', ...bounds }),
      parent: parent.id,
    }
    // A child of a pk holds public scopes alone: a pk, as any token with those scopes.
    holdNew(policyOf(records.catalog, account), child, now)
    const carved = await carve(trx, account, parent, child, input.credits, actor)
    await tokensRepo.insert(trx, child)
    const details = {
      usage: child.usage,
      scopes: child.scopes,
      parent: parent.id,
      chain: ancestors.map((a) => a.id).reverse(),
      ...(carved.given === undefined ? {} : { credits: carved.given }),
    }
    const target = { type: 'token' as const, id: child.id }
    const created = auditEvent(now, 'token.created', actor, target, account.username, details)
    // The events last in the transaction (db/audit.ts).
    await auditRepo.insert(trx, [created, ...carved.events])
    return child
  })
  return records.view(record)
}

/**
 * Gives a new child its credits in the create's transaction (usage/credits-carve.ts): taken off
 * the parent's balance when it has one, then required; a cap of its own otherwise. Answers the
 * credits given, if any, and the audit events the caller writes last.
 */
export type CarveCredits = (
  trx: Db,
  account: AccountRecord,
  parent: TokenRecord,
  child: TokenRecord,
  credits: number | undefined,
  actor: Actor,
) => Promise<{ given?: number; events: AuditEvent[] }>

/** Without a meter (the token service alone, in tests): no credits given. */
export const noCredits: CarveCredits = async (_trx, _account, _parent, _child, credits) => {
  if (credits !== undefined) fail('invalidResources', 'credits are not kept here')
  return { events: [] }
}

/**
 * What is left of a child's credits goes back to its parent's balance when the child alone is
 * deleted (within the parent's period and balance, as a returned lease: creditsRepo.giveBack).
 */
export async function returnCredits(trx: Db, child: TokenRecord): Promise<number> {
  if (child.parent === undefined) return 0
  const [row] = await creditsRepo.read(trx, child.username, [child.id], true)
  if (row === undefined) return 0
  await creditsRepo.remove(trx, child.username, [child.id])
  const [parent] = await creditsRepo.read(trx, child.username, [child.parent], true)
  if (parent === undefined || row.remaining === 0) return 0
  const given = await creditsRepo.giveBack(
    trx,
    child.username,
    child.parent,
    row.remaining,
    parent.period,
  )
  return given ? row.remaining : 0
}
