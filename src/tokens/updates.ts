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
import { ancestorsOf, endDescendants, holdChildren, moveChildren, narrowEnds } from './family.js'
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
  const allowedUrls = normalizeAllowedUrls(input.allowedUrls)
  const allowedIps = normalizeAllowedIps(input.allowedIps)
  const expiresAt = normalizeExpiresAt(input.expiresAt, records.now())
  const ratelimits = normalizeRatelimits(input.ratelimits)
  const scopes = input.scopes && records.checkScopes(account, principal, input.scopes)
  const record = await records.find(account, id)
  await records.refuseRetiring(record, principal.tokenId)
  const fields = ['note', 'scopes', 'allowedUrls', 'allowedIps', 'expiresAt', 'ratelimits'] as const
  const before = fields.map((k) => JSON.stringify(record[k] ?? null))
  const was = { expiresAt: record.expiresAt, allowedUrls: record.allowedUrls }
  if (scopes !== undefined) {
    if (record.scopeless && scopes.length > 0) {
      fail('invalidScopes', 'a token created with no scopes cannot be given scopes')
    }
    if (record.usage === 'pk' && scopes.some((id) => records.catalog.get(id)?.public !== true)) {
      fail('invalidScopes', 'a public token may hold public scopes only')
    }
    record.scopes = scopes
  }
  if (input.note !== undefined) record.note = input.note
  if (input.allowedUrls !== undefined) record.allowedUrls = allowedUrls
  if (input.allowedIps !== undefined) record.allowedIps = allowedIps
  if (expiresAt !== undefined) record.expiresAt = expiresAt
  if (ratelimits !== undefined) record.ratelimits = ratelimits
  holdChange(policyOf(records.catalog, account), was, record, records.now())
  record.modified = isoTime(records.now())
  // The fields whose value changed, not those sent: a form sends them all.
  const changed = fields.filter(
    (k, i) => input[k] !== undefined && JSON.stringify(record[k] ?? null) !== before[i],
  )
  const details = { fields: changed }
  const at = records.now()
  const event = auditEvent(at, 'token.updated', actor, tokenTarget(id), account.username, details)
  let family: string[] = []
  await records.change(id, event, async (db) => {
    await holdFamily(db, record)
    await tokensRepo.update(db, record)
    family = await narrowEnds(db, records.changes, record, actor, at)
  })
  records.forget(family)
  return records.view(record)
}

/**
 * An update keeps a child within every ancestor (its parent's row locked first, so that the
 * parent's own change waits) and a parent above its children (holdChildren): 422 otherwise.
 */
async function holdFamily(db: Db, record: TokenRecord): Promise<void> {
  if (record.parent !== undefined) {
    await familyRepo.lock(db, record.parent)
    for (const ancestor of await ancestorsOf(db, record)) {
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
  await holdChildren(db, record)
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
  // The caller must hold every scope of the token, as to give them.
  records.checkScopes(account, principal, old.scopes)
  const record: TokenRecord = {
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
  const retires = isoTime(endsAt)
  const details: Record<string, unknown> = { previous: old.id, usage: record.usage, retires }
  const target = tokenTarget(record.id)
  const family = await records.db.transaction().execute(async (trx) => {
    await endOldToken(trx, account, old.id, endsAt <= now ? undefined : retires)
    await tokensRepo.insert(trx, record)
    if (old.parent !== undefined) await creditsRepo.move(trx, account.username, old.id, record.id)
    // Its children follow the token that replaced it, or end with its string when asked.
    const ended = children === 'end'
    const changed = ended
      ? await endDescendants(trx, records.changes, old, 'rolled', actor, now)
      : await moveChildren(trx, records.changes, old.id, record, actor, now)
    if (changed.length > 0) details[ended ? 'ended' : 'moved'] = changed
    const at = records.now()
    await auditRepo.insert(
      trx,
      auditEvent(at, 'token.rolled', actor, target, account.username, details),
    )
    await records.changes.notify(trx, old.id)
    return changed
  })
  records.forget([old.id, ...family])
  return records.view(record)
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
  // go back to its parent.
  const family = await records.db.transaction().execute(async (trx) => {
    const deleted = await tokensRepo.delete(trx, account.username, id)
    if (deleted) await auditRepo.insert(trx, event)
    await records.changes.notify(trx, id)
    if (!deleted) return []
    await returnCredits(trx, record)
    return endDescendants(trx, records.changes, record, 'deleted', actor, at)
  })
  records.forget([id, ...family])
}

/** Removes rolled tokens whose end has come (their strings are refused already). */
export async function sweepRetired(records: TokenRecords): Promise<number> {
  const rows = await tokensRepo.retired(records.db, isoTime(records.now()), 500)
  for (const row of rows) {
    // A roll moved its children to its successor or ended them; any made since go with it.
    const family = await records.db.transaction().execute(async (trx) => {
      await tokensRepo.delete(trx, row.username, row.id)
      await records.changes.notify(trx, row.id)
      return endDescendants(trx, records.changes, row, 'retired', systemActor, records.now())
    })
    records.forget([row.id, ...family])
  }
  return rows.length
}
