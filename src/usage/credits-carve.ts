import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { creditsRepo } from '../db/credits.js'
import type { Db } from '../db/database.js'
import type { AccountRecord } from '../db/repositories.js'
import type { TokenRecord } from '../db/token-document.js'
import { fail } from '../errors.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { isoTime } from '../time.js'
import type { CarveCredits } from '../tokens/children.js'
import { balances, fresh } from './credits-state.js'

/** The token service's CarveCredits (tokens/children.ts), on this service's clock and plans. */
export const creditCarver =
  (catalog: ScopeCatalog, now: () => number): CarveCredits =>
  (trx, account, parent, child, credits, actor) =>
    carve(catalog, now(), trx, account, parent, child, credits, actor)

/**
 * A child's credits, taken off its parent's balance when the parent has one (then the child
 * must be given some: without a balance it would be unmetered, wider than its parent); given
 * as a cap of its own when the parent is unmetered. Both balances are changed in the create's
 * transaction, the parent's row locked: the parent's credits plus its children's never exceed
 * what the parent had. Answers the credits given, if any.
 */
async function carve(
  catalog: ScopeCatalog,
  now: number,
  trx: Db,
  account: AccountRecord,
  parent: TokenRecord,
  child: TokenRecord,
  credits: number | undefined,
  actor: Actor,
): Promise<{ given?: number; events: AuditEvent[] }> {
  if (credits !== undefined && (!Number.isSafeInteger(credits) || credits < 0)) {
    fail('invalidResources', 'credits must be a whole number from 0')
  }
  const found = await balances(trx, catalog, account.username, parent.id, now)
  const own = found?.token
  if (own === undefined) {
    if (credits === undefined) return { events: [] }
  } else {
    // Carved credits do not lapse at the parent's refill: carved from a refilling balance, a
    // child could bank a period's credits every period (docs/machines.md).
    if (own.refillInterval !== null) {
      fail(
        'invalidResources',
        "the parent token's credits refill: a child's credits are carved from a balance without refill",
      )
    }
    if (credits === undefined) {
      fail(
        'invalidResources',
        `the parent token has credits (${own.remaining} left): give the child a part of them with credits`,
      )
    }
    if ((await creditsRepo.take(trx, own, credits as number)) === undefined) {
      fail('invalidResources', `the parent token has ${own.remaining} credits left`)
    }
  }
  const given = credits as number
  const row = fresh(account.username, child.id, given, null, now, isoTime(now))
  await creditsRepo.put(trx, row)
  const events: AuditEvent[] = []
  const target = (id: string) => ({ type: 'token' as const, id })
  if (own !== undefined) {
    const details = {
      operation: 'carve',
      amount: given,
      remaining: own.remaining - given,
      child: child.id,
    }
    events.push(
      auditEvent(now, 'credits.changed', actor, target(parent.id), account.username, details),
    )
  }
  const details = { operation: 'set', remaining: given, refill: null, parent: parent.id }
  events.push(
    auditEvent(now, 'credits.changed', actor, target(child.id), account.username, details),
  )
  // Written by the caller, last in its transaction (db/audit.ts).
  return { given, events }
}
