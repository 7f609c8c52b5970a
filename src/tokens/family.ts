import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import type { TokenChanges } from '../db/changes.js'
import type { Db } from '../db/database.js'
import { deleteToken } from '../db/gone-tokens.js'
import { tokensRepo } from '../db/repositories.js'
import type { TokenRecord } from '../db/token-document.js'
import { familyRepo } from '../db/token-family.js'
import { fail } from '../errors.js'
import { widerThan } from './bounds.js'

/**
 * A token's family (docs/machines.md): the children made under it, theirs, and so on. Nothing
 * here runs on verification: a descendant is ended, moved or narrowed in the transaction that
 * changes its ancestor, and each change is announced on the change feed, so every instance and
 * worker drops it from its cache within the bounds revocation has.
 */

/** How deep a family goes at most: a child of a child of a child of a child (CHILD_TOKEN_DEPTH). */
export const maxDepth = 4

/** Why descendants end: their ancestor was deleted, revoked as leaked, rolled, idle or retired. */
export type EndCause = 'deleted' | 'leaked' | 'rolled' | 'idle' | 'retired'

/** The ancestors of a token, its parent first (at most `maxDepth` + 1 reads). */
export async function ancestorsOf(db: Db, token: TokenRecord): Promise<TokenRecord[]> {
  const found: TokenRecord[] = []
  let next = token.parent
  while (next !== undefined && found.length <= maxDepth) {
    const parent = await tokensRepo.find(db, next)
    if (parent === undefined) break
    found.push(parent)
    next = parent.parent
  }
  return found
}

/**
 * What a change of a family did: the tokens changed, for the caller to drop from this
 * instance's cache after the commit, and their audit events, for the caller to write last in
 * its transaction (db/audit.ts: the outbox's lock is taken by that write and must be the last
 * one, after every row lock, or two transactions wait on each other).
 */
export interface FamilyChange {
  ids: string[]
  events: AuditEvent[]
}

export const noChange = (): FamilyChange => ({ ids: [], events: [] })

/**
 * Deletes every descendant of `root` (deleted or retired already in this transaction), level by
 * level, each kept in gone_tokens like any deleted token, audited as `token.deleted` with the
 * chain from `root` down to its parent, and announced to every instance.
 */
export async function endDescendants(
  trx: Db,
  changes: TokenChanges,
  root: { id: string; username: string },
  cause: EndCause,
  actor: Actor,
  now: number,
): Promise<FamilyChange> {
  const ended: string[] = []
  const events: AuditEvent[] = []
  const chains = new Map<string, string[]>([[root.id, [root.id]]])
  let level = [root.id]
  for (let depth = 0; depth <= maxDepth && level.length > 0; depth++) {
    const children = await familyRepo.children(trx, level)
    for (const child of children) {
      const chain = [...(chains.get(child.parent as string) ?? []), child.id]
      chains.set(child.id, chain)
      if (!(await deleteToken(trx, child.username, child.id, false))) continue
      const details = { usage: child.usage, reason: 'parent', cause, chain: chain.slice(0, -1) }
      const target = { type: 'token' as const, id: child.id }
      events.push(auditEvent(now, 'token.deleted', actor, target, child.username, details))
      await changes.notify(trx, child.id)
      ended.push(child.id)
    }
    level = children.map((c) => c.id)
  }
  return { ids: ended, events }
}

/**
 * A roll's children go to the token that replaced their parent, at the roll: they keep working
 * through its grace and after, and never hang on a row the sweep will remove. The successor has
 * the old token's bounds, but perhaps an earlier end (rolledEnd): ends past it are narrowed.
 */
export async function moveChildren(
  trx: Db,
  changes: TokenChanges,
  from: string,
  to: TokenRecord,
  actor: Actor,
  now: number,
): Promise<FamilyChange> {
  const moved: string[] = []
  const events: AuditEvent[] = []
  for (const child of await familyRepo.children(trx, [from])) {
    await familyRepo.reparent(trx, child, to.id)
    await changes.notify(trx, child.id)
    moved.push(child.id)
    const details = { fields: ['parent'], reason: 'parent', cause: 'rolled' }
    events.push(updated(child, details, actor, now))
  }
  const narrowed = await narrowEnds(trx, changes, to, actor, now)
  return {
    ids: [...moved, ...narrowed.ids.filter((id) => !moved.includes(id))],
    events: [...events, ...narrowed.events],
  }
}

/**
 * After a token's end moved earlier: every descendant ending later, or never, ends with it
 * (so expiring a parent ends its family). Answers the ids changed.
 */
export async function narrowEnds(
  trx: Db,
  changes: TokenChanges,
  token: TokenRecord,
  actor: Actor,
  now: number,
): Promise<FamilyChange> {
  const changed: string[] = []
  const events: AuditEvent[] = []
  if (token.expiresAt == null) return { ids: changed, events }
  let level = [token]
  for (let depth = 0; depth <= maxDepth && level.length > 0; depth++) {
    const children = await familyRepo.children(
      trx,
      level.map((t) => t.id),
    )
    const ends = new Map(level.map((t) => [t.id, t.expiresAt ?? Infinity]))
    for (const child of children) {
      const end = ends.get(child.parent as string) ?? Infinity
      if (child.expiresAt != null && child.expiresAt <= end) continue
      child.expiresAt = end
      await tokensRepo.update(trx, child)
      await changes.notify(trx, child.id)
      changed.push(child.id)
      events.push(updated(child, { fields: ['expiresAt'], reason: 'parent' }, actor, now))
    }
    level = children
  }
  return { ids: changed, events }
}

/** A descendant changed by its ancestor's change: `token.updated`, as verifiers follow. */
const updated = (child: TokenRecord, details: Record<string, unknown>, actor: Actor, now: number) =>
  auditEvent(now, 'token.updated', actor, { type: 'token', id: child.id }, child.username, details)

/**
 * An update of a token with children may narrow its end (its family's ends follow: narrowEnds)
 * but nothing else below what a child holds: the child would be wider than its parent. Refused
 * (422) naming the child; the token's row is locked, so no child is made meanwhile.
 */
export async function holdChildren(trx: Db, token: TokenRecord): Promise<void> {
  await familyRepo.lock(trx, token.id)
  for (const child of await familyRepo.children(trx, [token.id])) {
    // Its end follows the parent's; anything else must already be within.
    const end = token.expiresAt != null ? { expiresAt: token.expiresAt } : {}
    const wider = widerThan({ ...child, ...end }, token)
    if (wider === undefined) continue
    const why = wider.replace('the parent token', 'this token')
    fail(
      wider.startsWith('the parent token does not hold') ? 'invalidScopes' : 'invalidResources',
      `its child token ${child.id} would be wider: ${why}; change or delete the child first`,
    )
  }
}
