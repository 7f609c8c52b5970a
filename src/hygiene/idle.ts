import { auditEvent, systemActor } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { type AccountRecord, type TokenRecord, tokensRepo } from '../db/repositories.js'
import { type IdleCandidate, warningsRepo } from '../db/warnings.js'
import { isoTime } from '../time.js'
import { policyOf } from '../tokens/policy.js'
import { dayMs, type HygieneDeps, idleNoticeMs, type Notice, type TokenWarning } from './warning.js'

/** What one idle sweep did. */
export interface IdleSweep {
  warned: number
  deleted: number
}

/** The idle candidates an account's sweep reads at most, the longest unused first. */
const perAccount = 2_000

/** How the sweep records a warning (once across a fleet) and hands it on. */
export interface IdleWarnings {
  record(
    token: TokenRecord,
    kind: string,
    basis: string,
    details: Record<string, unknown>,
  ): Promise<boolean>
  tell(warning: TokenWarning): void
}

/** When a token unused since `basis` (warned at `warned`) is deleted: never before either. */
const deletesAt = (basis: string, warned: number, days: number) =>
  Math.max(Date.parse(basis) + days * dayMs, warned + idleNoticeMs)

/**
 * A warning stands for the rule it was given under (its kind names the days) and for a day past
 * the deletion it announced: one older (the rule was off in between, or the sweep did not run)
 * is given again, and the deletion waits 7 days from then.
 */
const idleKind = (days: number) => `idle_${days}`
const standsMs = dayMs
const stale = (basis: string, warned: number, days: number, now: number) =>
  now > deletesAt(basis, warned, days) + standsMs

/**
 * Idle tokens, for every account whose policy has `idleDays`: a token unused (its last use, or
 * its creation if it was never used) for `idleDays` less 7 is warned (`token.idle`, once for
 * that last use); one still unused at its deletion time (`idleDays` after its last use, and 7
 * days after the warning at the earliest) is deleted (`token.deleted`, reason `idle`). A use in
 * between moves its last use, so the warning no longer matches and nothing is deleted; a policy
 * new to an account warns its long-unused tokens first, and deletes them 7 days later.
 * An account's default token, rolled tokens and tokens past their end are never idle-deleted.
 */
export async function sweepIdle(deps: HygieneDeps, warnings: IdleWarnings): Promise<IdleSweep> {
  const { db, catalog } = deps
  const plans = catalog.plansWithIdle()
  const done: IdleSweep = { warned: 0, deleted: 0 }
  for (const account of await warningsRepo.withPolicy(db, plans)) {
    const days = policyOf(catalog, account).idleDays
    if (days === undefined) continue
    const now = deps.tokens.now()
    const before = isoTime(now - (days * dayMs - idleNoticeMs))
    const candidates = await warningsRepo.idle(db, account.username, before, perAccount)
    const kind = idleKind(days)
    const ids = candidates.map((c) => c.token.id)
    const given = await warningsRepo.given(db, kind, ids)
    const warnedAt = new Map(given.map((w) => [`${w.token_id} ${w.basis}`, w.at]))
    for (const candidate of candidates) {
      // Ended already (its expiresAt passed): refused, nothing to warn of.
      if (candidate.token.expiresAt != null && candidate.token.expiresAt <= now) continue
      const basis = candidate.lastUsed ?? candidate.token.created
      const at = warnedAt.get(`${candidate.token.id} ${basis}`)
      const warned = at === undefined ? undefined : Date.parse(at)
      if (at === undefined || warned === undefined || stale(basis, warned, days, now)) {
        const warning = { kind, basis, was: at }
        if (await warn(deps, warnings, candidate, warning, days, now)) done.warned++
      } else if (now >= deletesAt(basis, warned, days)) {
        if (await remove(deps, account, candidate, days)) done.deleted++
      }
    }
  }
  return done
}

/** An idle warning given, or given again (`was`: when the stale one was), once across a fleet. */
async function warn(
  deps: HygieneDeps,
  warnings: IdleWarnings,
  candidate: IdleCandidate,
  warning: { kind: string; basis: string; was: string | undefined },
  days: number,
  now: number,
): Promise<boolean> {
  const { token, lastUsed } = candidate
  const { kind, basis, was } = warning
  const at = isoTime(deletesAt(basis, now, days))
  const details = { usage: token.usage, lastUsed: lastUsed ?? null, idleDays: days, deletesAt: at }
  const given =
    was === undefined
      ? await warnings.record(token, kind, basis, details)
      : await renew(deps, token, { kind, basis, was }, details, now)
  if (!given) return false
  warnings.tell({ kind: 'idle', account: token.username, token: deps.tokens.listed(token), at })
  return true
}

/** A stale warning given again, with its event, unless another instance did first. */
async function renew(
  deps: HygieneDeps,
  token: TokenRecord,
  w: { kind: string; basis: string; was: string },
  details: Record<string, unknown>,
  now: number,
): Promise<boolean> {
  const row = {
    token_id: token.id,
    kind: w.kind,
    basis: w.basis,
    username: token.username,
    at: isoTime(now),
  }
  const target = { type: 'token' as const, id: token.id }
  const event = auditEvent(now, 'token.idle', systemActor, target, token.username, details)
  return deps.db.transaction().execute(async (trx) => {
    if (!(await warningsRepo.renew(trx, row, w.was))) return false
    await auditRepo.insert(trx, event)
    return true
  })
}

/** Deletes an idle token, as a deletion by Tessera itself; whether this call deleted it. */
async function remove(
  deps: HygieneDeps,
  account: AccountRecord,
  candidate: IdleCandidate,
  days: number,
): Promise<boolean> {
  const { token, lastUsed } = candidate
  const details = { usage: token.usage, reason: 'idle', idleDays: days, lastUsed: lastUsed ?? null }
  const target = { type: 'token' as const, id: token.id }
  const now = deps.tokens.now()
  const event = auditEvent(now, 'token.deleted', systemActor, target, account.username, details)
  const family = await deps.db.transaction().execute(async (trx) => {
    // Given a child since it was found idle: in use through it, kept.
    if (await deps.tokens.hasChildren(trx, token.id)) return undefined
    if (!(await tokensRepo.deleteUnretired(trx, account.username, token.id))) return undefined
    await deps.tokens.notifyChanged(trx, [token.id])
    const family = await deps.tokens.endDescendants(trx, token, 'idle', systemActor)
    // The events last (db/audit.ts).
    await auditRepo.insert(trx, [event, ...family.events])
    return family
  })
  if (family === undefined) return false
  deps.tokens.forget([token.id, ...family.ids])
  return true
}

/**
 * The account's tokens warned as idle and still unused since, with when they will be deleted
 * under its policy now (none if the policy no longer has `idleDays`).
 */
export async function idleDeletion(
  deps: HygieneDeps,
  username: string,
  now: number,
): Promise<Notice[]> {
  const account = await deps.tokens.directory.find(username)
  const days = account === undefined ? undefined : policyOf(deps.catalog, account).idleDays
  if (days === undefined) return []
  const notices: Notice[] = []
  for (const w of await warningsRepo.warnedOf(deps.db, username, idleKind(days))) {
    if (w.basis !== (w.lastUsed ?? w.token.created)) continue
    const warned = Date.parse(w.warned)
    // A stale warning is given again within the hour, from which the deletion waits 7 days.
    const ends = stale(w.basis, warned, days, now)
      ? now + idleNoticeMs
      : Math.max(deletesAt(w.basis, warned, days), now)
    notices.push({ kind: 'idle', token: deps.tokens.listed(w.token), at: isoTime(ends) })
  }
  return notices
}
