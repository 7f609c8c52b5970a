import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import { type CreditRow, creditsRepo } from '../db/credits.js'
import type { Db } from '../db/database.js'
import type { PlanCredits, ScopeCatalog } from '../scopes/catalog.js'
import { isoTime } from '../time.js'
import { lastRefill, nextRefill, type Refill } from './credits-period.js'

/** A balance as the admin API, the CLI and the dashboard show it. */
export interface Credits {
  remaining: number
  /** What the period started with (set or refilled), plus increments: thresholds are shares of it. */
  balance: number
  refill: Refill | null
  /** When the current period began (ISO 8601): the last set or refill. */
  period: string
  /** The next refill (ISO 8601), with a refill. */
  nextRefill?: string
  /** Given by the account's plan, not changed by an operator since. */
  plan?: true
}

/** The account's balance and the token's, as they stand after any refill that was due. */
export interface Balances {
  token?: CreditRow
  account?: CreditRow
}

export const refillOf = (row: CreditRow): Refill | null => {
  if (row.refillInterval === null || row.refillAmount === null) return null
  const refill: Refill = { interval: row.refillInterval, amount: row.refillAmount }
  if (row.refillInterval === 'monthly') refill.day = row.refillDay ?? 1
  return refill
}

export function view(row: CreditRow): Credits {
  const refill = refillOf(row)
  const credits: Credits = {
    remaining: row.remaining,
    balance: row.balance,
    refill,
    period: row.period,
  }
  if (refill !== null) credits.nextRefill = isoTime(nextRefill(refill, Date.parse(row.period)))
  if (row.plan !== null) credits.plan = true
  return credits
}

/** A new balance of `remaining` from `now`, set by an operator (`changed`) or by a plan. */
export const fresh = (
  account: string,
  tokenId: string,
  remaining: number,
  refill: Refill | null,
  now: number,
  changed: string,
  plan: string | null = null,
): CreditRow => ({
  account,
  tokenId,
  remaining,
  balance: remaining,
  refillInterval: refill?.interval ?? null,
  refillAmount: refill?.amount ?? null,
  refillDay: refill?.interval === 'monthly' ? (refill.day ?? 1) : null,
  period: isoTime(now),
  notified: 0,
  changed,
  plan,
})

const planRefill = (plan: PlanCredits): Refill | null =>
  plan.refill === undefined
    ? null
    : { interval: plan.refill, amount: plan.amount, ...(plan.day ? { day: plan.day } : {}) }

/**
 * What a plan balance records it came from: the plan and its credits settings. A balance whose
 * record is no longer the account's plan's follows the plan (rewritten, or removed).
 */
export const planKey = (name: string, plan: PlanCredits) =>
  `${name} ${plan.amount} ${plan.refill ?? 'none'} ${plan.refill === 'monthly' ? (plan.day ?? 1) : '-'}`

/** The balance as it stands at `now`: a refill that was due is made (a refill SETS). */
function refilled(row: CreditRow, now: number): CreditRow {
  const refill = refillOf(row)
  if (refill === null || now < nextRefill(refill, Date.parse(row.period))) return row
  const period = isoTime(lastRefill(refill, now))
  return { ...row, remaining: refill.amount, balance: refill.amount, period, notified: 0 }
}

/**
 * A balance of an earlier account of the same name: a name is free again an hour after its
 * account was deleted, so such a balance began at least an hour before the account was
 * created; half an hour leaves room for instances' clocks to differ.
 */
const isStale = (row: CreditRow, created: string) =>
  Date.parse(row.period) < Date.parse(created) - 30 * 60_000

interface Owner {
  plan: string
  created: string
}

/** A row that is not the account's: left by an earlier account, or given by another plan. */
function isGone(row: CreditRow, owner: Owner, key: string | undefined) {
  return isStale(row, owner.created) || (row.plan !== null && row.plan !== key)
}

/**
 * The balances of an account and one of its tokens as they stand now: a balance left by an
 * earlier account of the same name is dropped, a plan balance follows the account's plan (the
 * plan's balance afresh when the plan or its credits changed, none when it has none), the plan's
 * balance is given when the account has none of its own, and a refill that was due is made.
 * `write`: in the caller's transaction, the rows locked on PostgreSQL and all that written;
 * otherwise read without a lock and computed in memory, nothing written (a cost of 0, a GET).
 * Undefined when there is no such account.
 */
export async function balances(
  trx: Db,
  catalog: ScopeCatalog,
  account: string,
  tokenId: string | undefined,
  now: number,
  write = true,
): Promise<Balances | undefined> {
  const ids = tokenId === undefined ? [''] : ['', tokenId]
  let rows = await creditsRepo.read(trx, account, ids, write)
  const owner = await creditsRepo.owner(trx, account)
  if (owner === undefined) return undefined
  const plan = catalog.planCredits(owner.plan)
  const key = plan === undefined ? undefined : planKey(owner.plan, plan)
  const gone = rows.filter((r) => isGone(r, owner, key))
  if (gone.length > 0) {
    rows = rows.filter((r) => !isGone(r, owner, key))
    if (write)
      await creditsRepo.remove(
        trx,
        account,
        gone.map((r) => r.tokenId),
      )
  }
  if (plan !== undefined && key !== undefined && !rows.some((r) => r.tokenId === '')) {
    const given = fresh(account, '', plan.amount, planRefill(plan), now, '', key)
    if (write) {
      await creditsRepo.insertIfAbsent(trx, given)
      rows = await creditsRepo.read(trx, account, ids, true)
    } else rows.unshift(given)
  }
  const found: Balances = {}
  for (const row of rows) {
    const current = refilled(row, now)
    if (write && current !== row) {
      const { remaining, balance, period, notified } = current
      await creditsRepo.update(trx, row, { remaining, balance, period, notified })
    }
    if (row.tokenId === '') found.account = current
    else found.token = current
  }
  return found
}

/** The thresholds (percent of the balance spent) newly crossed, ascending. */
export function crossed(row: CreditRow, thresholds: readonly number[]): number[] {
  if (row.balance <= 0) return []
  const spent = row.balance - row.remaining
  return thresholds.filter((t) => t > row.notified && spent * 100 >= t * row.balance)
}

/**
 * The `credits.threshold` events of a balance after a spend, and the threshold it is marked
 * with, so that each is announced once a period (the row is locked: no other writer between).
 */
export async function announce(
  trx: Db,
  row: CreditRow,
  thresholds: readonly number[],
  actor: Actor,
  now: number,
): Promise<AuditEvent[]> {
  const newly = crossed(row, thresholds)
  const highest = newly.at(-1)
  if (highest === undefined) return []
  await creditsRepo.update(trx, row, { notified: highest })
  return newly.map((threshold) =>
    auditEvent(now, 'credits.threshold', actor, creditTarget(row), row.account, {
      threshold,
      remaining: row.remaining,
      balance: row.balance,
    }),
  )
}

export const creditTarget = (row: { account: string; tokenId: string }) =>
  row.tokenId === ''
    ? { type: 'account' as const, id: row.account }
    : { type: 'token' as const, id: row.tokenId }
