import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { creditsRepo } from '../db/credits.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, tokensRepo } from '../db/repositories.js'
import type { TokenRecord, TokenView } from '../db/token-document.js'
import { familyRepo } from '../db/token-family.js'
import { fail } from '../errors.js'
import { isoTime, parseTimestamp } from '../time.js'
import { ancestorsOf, endDescendants, moveChildren } from './family.js'
import { holdGrace, policyOf, rolledEnd } from './policy.js'
import type { Principal } from './principal.js'
import type { TokenRecords } from './records.js'
import { holdAncestors, retiringDetails, tokenTarget } from './updates.js'

const dayMs = 24 * 3_600_000

/** When a rolled token's old string ends (epoch ms): `expires`, at most a day ahead, or now. */
function rollEnd(expires: unknown, now: number): number {
  if (expires === undefined) return now
  const at = typeof expires === 'string' ? parseTimestamp(expires) : undefined
  if (at === undefined) return fail('invalidResources', 'expires must be an ISO 8601 timestamp')
  if (at < now) fail('expiresInPast')
  if (at > now + dayMs) fail('rollTooFar')
  return at
}

/**
 * Rolls a pk/sk: a new token (new id and string; the same note, scopes, allowed URLs and
 * default flag, created now), while the old string works until `expires` (now when absent;
 * at most 24 hours ahead). Rules as for update. A token is rolled once: a retiring one is
 * refused (409), also when two rolls race (the retire is conditional, in the transaction). The
 * new token records the first of its line (`lineage`): see refuseRetiring.
 */
export async function rollToken(
  records: TokenRecords,
  account: AccountRecord,
  principal: Principal,
  id: string,
  input: { expires?: unknown; children?: unknown },
  actor: Actor,
): Promise<TokenView> {
  if (principal.usage === 'tk') fail('temporaryNotRollable')
  const children = input.children ?? 'move'
  if (children !== 'move' && children !== 'end') {
    fail('invalidResources', 'children must be move or end')
  }
  const now = records.now()
  const endsAt = rollEnd(input.expires, now)
  const policy = policyOf(records.catalog, account)
  holdGrace(policy, endsAt, now)
  const old = await records.find(account, id)
  if (old.retiresAt !== undefined && old.retiresAt <= now) {
    fail('notFound', 'no token with this id in this account')
  }
  await records.refuseRetiring(old, principal.tokenId)
  if (old.retiresAt !== undefined) return fail('tokenRetiring', retiringDetails(old.retiresAt))
  // A child's credits are its parent's, carved: they go to its successor at once, and its old
  // string, unmetered then, must end at once too (docs/machines.md).
  if (old.parent !== undefined && endsAt > now) {
    fail('invalidResources', 'a child token is rolled without a grace: omit expires')
  }
  const retires = isoTime(endsAt)
  const details: Record<string, unknown> = { previous: old.id, usage: old.usage, retires }
  // In one transaction, the parent's row locked first and the token read again under its lock:
  // its successor is made of what it is now, and is held to every ancestor (a roll racing an
  // ancestor's change or end neither outlives nor out-widens it).
  const { record, family } = await records.db.transaction().execute(async (trx) => {
    const parent = old.parent === undefined ? undefined : await familyRepo.lock(trx, old.parent)
    const current = await familyRepo.lock(trx, old.id)
    if (current === undefined || (old.parent !== undefined && parent === undefined)) {
      return fail('notFound', 'no token with this id in this account')
    }
    if (current.retiresAt !== undefined) {
      return fail('tokenRetiring', retiringDetails(current.retiresAt))
    }
    // Moved meanwhile to the token that replaced its parent (that roll held the old parent's
    // row, which this one waited for): the new parent's row is the one to hold.
    if (current.parent !== old.parent && current.parent !== undefined) {
      if ((await familyRepo.lock(trx, current.parent)) === undefined) {
        return fail('notFound', 'no token with this id in this account')
      }
    }
    // The caller must hold every scope of the token, as to give them.
    records.checkScopes(account, principal, current.scopes)
    const record = successorOf(records, account, current, now)
    if (record.parent !== undefined) holdAncestors(record, await ancestorsOf(trx, record))
    await endOldToken(trx, account, old.id, endsAt <= now ? undefined : retires)
    await tokensRepo.insert(trx, record)
    if (old.parent !== undefined) await creditsRepo.move(trx, account.username, old.id, record.id)
    // Its children follow the token that replaced it, or end with its string when asked.
    const ended = children === 'end'
    const family = ended
      ? await endDescendants(trx, records.changes, current, 'rolled', actor, now)
      : await moveChildren(trx, records.changes, old.id, record, actor, now)
    if (family.ids.length > 0) details[ended ? 'ended' : 'moved'] = family.ids
    const target = tokenTarget(record.id)
    const event = auditEvent(
      records.now(),
      'token.rolled',
      actor,
      target,
      account.username,
      details,
    )
    await records.changes.notify(trx, old.id)
    await auditRepo.insert(trx, [event, ...family.events])
    return { record, family }
  })
  records.forget([old.id, ...family.ids])
  return records.view(record)
}

/**
 * A roll's new token: a new id and string; the same note, scopes, allowed URLs and IP ranges,
 * limits, default flag and parent, created now.
 */
function successorOf(
  records: TokenRecords,
  account: AccountRecord,
  old: TokenRecord,
  now: number,
): TokenRecord {
  const policy = policyOf(records.catalog, account)
  return {
    ...records.newRecord(account, {
      note: old.note,
      scopes: old.scopes,
      allowedUrls: old.allowedUrls,
      allowedIps: old.allowedIps ?? null,
      // Its end of life goes with it: a roll replaces a string, not a decision about its term;
      // within the policy, as any new token (rolledEnd).
      expiresAt: rolledEnd(policy, old, now),
      // Its limits too: they bound what it may cost, whichever string is used.
      ratelimits: old.ratelimits ?? null,
      isDefault: old.isDefault,
    }),
    usage: old.usage,
    scopeless: old.scopeless,
    lineage: old.lineage ?? old.id,
    ...(old.parent === undefined ? {} : { parent: old.parent }),
  }
}

/**
 * The old token of a roll, first: one default token per account at any moment. Deleted, or
 * retiring from `retires`; only if no other roll came first (since it was read): then it is
 * retiring (409) or gone (404).
 */
async function endOldToken(trx: Db, account: AccountRecord, id: string, retires?: string) {
  const ended =
    retires === undefined
      ? await tokensRepo.deleteUnretired(trx, account.username, id)
      : await tokensRepo.retire(trx, id, retires)
  if (ended) return
  const current = await tokensRepo.find(trx, id)
  if (current?.retiresAt === undefined) {
    fail('notFound', 'no token with this id in this account')
  } else fail('tokenRetiring', retiringDetails(current.retiresAt))
}
