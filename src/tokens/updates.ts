import { type Actor, auditEvent, systemActor } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, tokensRepo } from '../db/repositories.js'
import type { TokenRecord, TokenView } from '../db/token-document.js'
import { familyRepo } from '../db/token-family.js'
import { fail } from '../errors.js'
import { isoTime } from '../time.js'
import { widerThan } from './bounds.js'
import { returnCredits } from './children.js'
import type { TokenFields } from './creation.js'
import { ancestorsOf, endDescendants, holdChildren, narrowEnds, noChange } from './family.js'
import { holdChange, policyOf } from './policy.js'
import type { Principal } from './principal.js'
import type { TokenRecords } from './records.js'
import {
  normalizeAllowedIps,
  normalizeAllowedUrls,
  normalizeExpiresAt,
  normalizeRatelimits,
} from './rules.js'

export const retiringDetails = (retiresAt: number) =>
  `it works until ${isoTime(retiresAt)}, then ends: roll the token that replaced it`

/** What changes a token: whose, by whom, which, how, and who asked (for the audit event). */
export type TokenChange<Input> = [
  account: AccountRecord,
  principal: Principal,
  id: string,
  input: Input,
  actor: Actor,
]

export const tokenTarget = (id: string) => ({ type: 'token' as const, id })

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
export function holdAncestors(record: TokenRecord, ancestors: readonly TokenRecord[]): void {
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
