import { type Actor, auditEvent, systemActor } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { creditsRepo } from '../db/credits.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, tokensRepo } from '../db/repositories.js'
import type { TokenRecord, TokenView } from '../db/token-document.js'
import { familyRepo } from '../db/token-family.js'
import { fail } from '../errors.js'
import { isoTime, parseTimestamp } from '../time.js'
import { widerThan } from './bounds.js'
import { returnCredits } from './children.js'
import type { TokenFields } from './creation.js'
import {
  ancestorsOf,
  endDescendants,
  holdChildren,
  moveChildren,
  narrowEnds,
  noChange,
} from './family.js'
import { holdChange, holdGrace, policyOf, rolledEnd } from './policy.js'
import type { Principal } from './principal.js'
import type { TokenRecords } from './records.js'
import {
  normalizeAllowedIps,
  normalizeAllowedUrls,
  normalizeExpiresAt,
  normalizeRatelimits,
} from './rules.js'

const dayMs = 24 * 3_600_000

const retiringDetails = (retiresAt: number) =>
  `it works until ${isoTime(retiresAt)}, then ends: roll the token that replaced it`

/** What changes a token: whose, by whom, which, how, and who asked (for the audit event). */
export type TokenChange<Input> = [
  account: AccountRecord,
  principal: Principal,
  id: string,
  input: Input,
  actor: Actor,
]

const tokenTarget = (id: string) => ({ type: 'token' as const, id })

export async function updateToken(
  records: TokenRecords,
  account: AccountRecord,
  principal: Principal,
  id: string,
  input: TokenFields,
  actor: Actor,
): Promise<TokenView> {
  if (
    input.note === undefined &&
    input.scopes === undefined &&
    input.allowedUrls === undefined &&
    input.allowedIps === undefined &&
    input.expiresAt === undefined &&
    input.ratelimits === undefined
  ) {
    fail('invalidResources', 'name at least one of note, scopes and allowedUrls')
  }
  const asked = {
    allowedUrls: normalizeAllowedUrls(input.allowedUrls),
    allowedIps: normalizeAllowedIps(input.allowedIps),
    expiresAt: normalizeExpiresAt(input.expiresAt, records.now()),
    ratelimits: normalizeRatelimits(input.ratelimits),
    scopes: input.scopes && records.checkScopes(account, principal, input.scopes),
  }
  const found = await records.find(account, id)
  await records.refuseRetiring(found, principal.tokenId)
  // Read again in the transaction, its parent's row and its own locked (ancestors first, as
  // every change of a family): a concurrent change of either is not written over.
  const { record, family } = await records.db.transaction().execute(async (trx) => {
    if (found.parent !== undefined) await familyRepo.lock(trx, found.parent)
    const current = await familyRepo.lock(trx, id)
    if (current === undefined || current.username !== account.username) {
      return fail('notFound', 'no token with this id in this account')
    }
    const record = applyUpdate(records, account, current, input, asked)
    // A child token narrows what it changes, itself included: never widens it (docs/machines.md).
    const wider = principal.child ? widerThan(record, current) : undefined
    if (wider !== undefined) {
      fail(
        'invalidResources',
        `a child token may only narrow: ${wider.replace('the parent token', 'the token now')}`,
      )
    }
    await holdFamily(trx, record)
    await tokensRepo.update(trx, record)
    const at = records.now()
    const family = await narrowEnds(trx, records.changes, record, actor, at)
    const details = { fields: changedFields(input, current, record) }
    const event = auditEvent(at, 'token.updated', actor, tokenTarget(id), account.username, details)
    await records.changes.notify(trx, id)
    await auditRepo.insert(trx, [event, ...family.events])
    return { record, family }
  })
  records.forget([id, ...family.ids])
  return records.view(record)
}

const updatable = [
  'note',
  'scopes',
  'allowedUrls',
  'allowedIps',
  'expiresAt',
  'ratelimits',
] as const

/** The fields whose value changed, not those sent: a form sends them all. */
const changedFields = (input: TokenFields, before: TokenRecord, after: TokenRecord) =>
  updatable.filter(
    (k) =>
      input[k] !== undefined &&
      JSON.stringify(after[k] ?? null) !== JSON.stringify(before[k] ?? null),
  )

/** The record as the update makes it, within the account's token policy. */
function applyUpdate(
  records: TokenRecords,
  account: AccountRecord,
  current: TokenRecord,
  input: TokenFields,
  asked: {
    allowedUrls: string[] | null
    allowedIps: string[] | null
    expiresAt: number | null | undefined
    ratelimits: TokenRecord['ratelimits'] | undefined
    scopes: string[] | undefined
  },
): TokenRecord {
  const record: TokenRecord = { ...current }
  const { scopes } = asked
  if (scopes !== undefined) {
    if (record.scopeless && scopes.length > 0) {
      fail('invalidScopes', 'a token created with no scopes cannot be given scopes')
    }
    if (record.usage === 'pk' && scopes.some((s) => records.catalog.get(s)?.public !== true)) {
      fail('invalidScopes', 'a public token may hold public scopes only')
    }
    record.scopes = scopes
  }
  if (input.note !== undefined) record.note = input.note
  if (input.allowedUrls !== undefined) record.allowedUrls = asked.allowedUrls
  if (input.allowedIps !== undefined) record.allowedIps = asked.allowedIps
  if (asked.expiresAt !== undefined) record.expiresAt = asked.expiresAt
  if (asked.ratelimits !== undefined) record.ratelimits = asked.ratelimits
  const was = { expiresAt: current.expiresAt, allowedUrls: current.allowedUrls }
  holdChange(policyOf(records.catalog, account), was, record, records.now())
  record.modified = isoTime(records.now())
  return record
}

/**
 * An update keeps a child within every ancestor (its parent's row locked first, so that the
 * parent's own change waits) and a parent above its children (holdChildren): 422 otherwise.
 */
async function holdFamily(db: Db, record: TokenRecord): Promise<void> {
  if (record.parent !== undefined) holdAncestors(record, await ancestorsOf(db, record))
  await holdChildren(db, record)
}

/** 422 when `record` is wider than one of its ancestors (the parent first), naming which. */
function holdAncestors(record: TokenRecord, ancestors: readonly TokenRecord[]): void {
  for (const ancestor of ancestors) {
    const wider = widerThan(record, ancestor)
    if (wider === undefined) continue
    const kind = wider.startsWith('the parent token does not hold')
      ? 'invalidScopes'
      : 'invalidResources'
    const whose =
      ancestor.id === record.parent ? 'the parent token' : `the token ${ancestor.id} above it`
    fail(kind, wider.replace('the parent token', whose))
  }
}

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

export async function removeToken(
  records: TokenRecords,
  account: AccountRecord,
  id: string,
  actor: Actor,
): Promise<void> {
  const record = await records.find(account, id)
  // The token that authorised an API request is its actor (principalActor). Asked first: a
  // token outside a child's family is not the child's to learn anything of.
  await records.refuseRetiring(record, actor.type === 'token' ? actor.id : undefined)
  if (record.isDefault) fail('defaultTokenUndeletable')
  const details = { usage: record.usage }
  const at = records.now()
  const event = auditEvent(at, 'token.deleted', actor, tokenTarget(id), account.username, details)
  // Deleted by someone else in between: the outcome the caller asked for holds, and only the
  // deletion that removed the row is recorded. Its family ends with it; a child's credits left
  // go back to its parent. Its audit events are the transaction's last write (db/audit.ts).
  const family = await records.db.transaction().execute(async (trx) => {
    const deleted = await tokensRepo.delete(trx, account.username, id)
    await records.changes.notify(trx, id)
    if (!deleted) return noChange()
    await returnCredits(trx, record)
    const family = await endDescendants(trx, records.changes, record, 'deleted', actor, at)
    await auditRepo.insert(trx, [event, ...family.events])
    return family
  })
  records.forget([id, ...family.ids])
}

/** Removes rolled tokens whose end has come (their strings are refused already). */
export async function sweepRetired(records: TokenRecords): Promise<number> {
  const rows = await tokensRepo.retired(records.db, isoTime(records.now()), 500)
  for (const row of rows) {
    // A roll moved its children to its successor or ended them; any made since go with it.
    const family = await records.db.transaction().execute(async (trx) => {
      await tokensRepo.delete(trx, row.username, row.id)
      await records.changes.notify(trx, row.id)
      const now = records.now()
      const family = await endDescendants(trx, records.changes, row, 'retired', systemActor, now)
      await auditRepo.insert(trx, family.events)
      return family
    })
    records.forget([row.id, ...family.ids])
  }
  return rows.length
}
