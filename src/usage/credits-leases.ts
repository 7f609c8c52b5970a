import type { Logger } from 'pino'
import type { AuditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import { type CreditRow, creditsRepo, type LeaseRow } from '../db/credits.js'
import type { Db } from '../db/database.js'
import { isoTime } from '../time.js'
import { isLeaseId, leaseId, leaseMs, nextRefill } from './credits-period.js'
import { type Balances, refillOf } from './credits-state.js'

/**
 * A verifier's lease: `granted` credits taken off the balances at once, to spend until
 * `expires`. `granted` null: nothing is metered. With 0 granted there is no lease; `expires`
 * then says how long the answer holds (a change of the balance sends `credits.changed`).
 */
export interface Lease {
  granted: number | null
  lease?: string
  expires?: string
}

/** The unspent part of a lease, as a verifier's report returns it. */
export interface Returned {
  account: string
  token?: string
  amount: number
  lease: string
}

/** A lease ends a minute after it is granted, or at the next refill of either balance. */
function leaseEnd(rows: CreditRow[], now: number): number {
  let ends = now + leaseMs
  for (const row of rows) {
    const refill = refillOf(row)
    if (refill !== null) ends = Math.min(ends, nextRefill(refill, Date.parse(row.period)))
  }
  return ends
}

/**
 * Grants a lease of at most `want` from the balances found (locked by the caller), recorded
 * for the account and token it was asked for: a return names them as the request did.
 */
export async function leaseOf(
  trx: Db,
  asked: { account: string; tokenId?: string },
  found: Balances | undefined,
  want: number,
  now: number,
  announce: (row: CreditRow) => Promise<AuditEvent[]>,
): Promise<Lease> {
  const rows = [found?.token, found?.account].filter((r): r is CreditRow => r !== undefined)
  if (rows.length === 0) return { granted: null }
  const expires = isoTime(leaseEnd(rows, now))
  const granted = Math.min(want, ...rows.map((r) => r.remaining))
  if (granted <= 0) return { granted: 0, expires }
  const events: AuditEvent[] = []
  for (const row of rows) {
    const remaining = await creditsRepo.take(trx, row, granted)
    if (remaining === undefined) throw new Error('a locked balance changed')
    row.remaining = remaining
    events.push(...(await announce(row)))
  }
  await auditRepo.insert(trx, events)
  const lease = {
    id: leaseId(),
    account: asked.account,
    tokenId: asked.tokenId ?? '',
    tokenPeriod: found?.token?.period ?? null,
    accountPeriod: found?.account?.period ?? null,
    granted,
    expires,
  }
  await creditsRepo.grant(trx, lease)
  return { granted, lease: lease.id, expires }
}

interface Give {
  account: string
  tokenId: string
  amount: number
  period: string
}

/** Why returned leases were not credited, counted for the log (never the ids). */
interface Skipped {
  unknown: number
  foreign: number
}

/** The lease `r` names, when it is outstanding and was granted to the account and token it names. */
function matching(r: Returned, lease: LeaseRow | undefined, skipped: Skipped) {
  if (lease === undefined) {
    skipped.unknown++
    return undefined
  }
  if (lease.account !== r.account || lease.tokenId !== (r.token ?? '')) {
    skipped.foreign++
    return undefined
  }
  return lease
}

/** What one lease gives back: the amount (at most its grant) to each balance it came from. */
function gifts(lease: LeaseRow, amount: number): Give[] {
  const out: Give[] = []
  const { account, tokenId } = lease
  if (lease.accountPeriod !== null) {
    out.push({ account, tokenId: '', amount, period: lease.accountPeriod })
  }
  if (tokenId !== '' && lease.tokenPeriod !== null) {
    out.push({ account, tokenId, amount, period: lease.tokenPeriod })
  }
  return out
}

/**
 * Credits returned leases back (see CreditService.returnLeases); answers how many balances
 * were credited. `settle` locks a balance and makes what was due (a refill). Each lease is marked returned first (a conditional update: once only, even
 * when two reports carry it), in the order of their ids; then the balances are credited in
 * the order spends lock them (accounts in order, the account's row before its tokens').
 */
export async function returnLeases(
  trx: Db,
  returned: readonly Returned[],
  log: Logger,
  settle: (account: string, tokenId: string | undefined) => Promise<unknown>,
): Promise<number> {
  const skipped: Skipped = { unknown: 0, foreign: 0 }
  const ids = [...new Set(returned.map((r) => r.lease).filter(isLeaseId))].sort()
  const leases = new Map((await creditsRepo.outstanding(trx, ids)).map((l) => [l.id, l]))
  const give: Give[] = []
  const byId = [...returned].sort((a, b) => compare(a.lease, b.lease))
  for (const r of byId) {
    const lease = matching(r, leases.get(r.lease), skipped)
    if (lease === undefined) continue
    leases.delete(r.lease)
    const amount = Math.min(r.amount, lease.granted)
    if (!Number.isSafeInteger(amount) || amount < 0) continue
    if (!(await creditsRepo.markReturned(trx, lease.id, amount))) {
      skipped.unknown++
      continue
    }
    if (amount > 0) give.push(...gifts(lease, amount))
  }
  if (skipped.unknown + skipped.foreign > 0) {
    // Unknown: never granted, returned already, or pruned. Foreign: named another account or token.
    log.warn(skipped, 'returned leases not credited back')
  }
  const key = (g: Give) => `${g.account}\u0000${g.tokenId}`
  give.sort((a, b) => compare(key(a), key(b)))
  let counted = 0
  const settled = new Set<string>()
  for (const g of give) {
    // Locked, and refilled when that was due: a return never counts in a period that ended.
    if (!settled.has(key(g))) {
      await settle(g.account, g.tokenId === '' ? undefined : g.tokenId)
      settled.add(key(g))
    }
    if (await creditsRepo.giveBack(trx, g.account, g.tokenId, g.amount, g.period)) counted++
  }
  return counted
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
