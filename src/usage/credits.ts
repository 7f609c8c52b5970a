import type { Logger } from 'pino'
import { type Actor, type AuditEvent, auditEvent } from '../audit/events.js'
import type { Config } from '../config.js'
import { auditRepo } from '../db/audit.js'
import { type CreditRow, creditsRepo } from '../db/credits.js'
import type { Db } from '../db/database.js'
import { ApiError } from '../errors.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { isoTime } from '../time.js'
import { type Lease, leaseOf, type Returned, returnLeases } from './credits-leases.js'
import type { Refill } from './credits-period.js'
import {
  announce,
  type Balances,
  balances,
  type Credits,
  creditTarget,
  fresh,
  refillOf,
  view,
} from './credits-state.js'

export { creditCarver } from './credits-carve.js'
export type { Lease, Returned } from './credits-leases.js'
export type { Refill } from './credits-period.js'
export type { Credits } from './credits-state.js'

export interface CreditDeps {
  db: Db
  catalog: ScopeCatalog
  config: Config
  log: Logger
  now: () => number
}

/** Whose balance: a token's, or with no `tokenId` its account's (shared by all its tokens). */
export interface CreditTarget {
  account: string
  tokenId?: string
}

/** A spend: whether it was made, and the balances after (before, when it was not). */
export interface Spent {
  ok: boolean
  token?: number
  account?: number
}

/** The most a balance holds: beyond it, JSON numbers are no longer whole. */
export const maxCredits = Number.MAX_SAFE_INTEGER

/** How long a lease is kept after it expires: a return later than that is not credited. */
export const leaseKeptMs = 86_400_000

/** Who changed credits when the caller names nobody. */
const system: Actor = { type: 'admin' }

/**
 * Credits of tokens and accounts (docs/credits.md): balances set by operators or given by a
 * plan, refilled lazily, spent by introspection and leased to verifiers. Every spend and lease
 * takes from the token's balance and the account's in one transaction, both or none, with
 * conditional updates (`remaining >= cost`) on rows locked in one order: a balance is never
 * overspent, whatever the number of instances.
 */
export class CreditService {
  constructor(readonly deps: CreditDeps) {}

  /** The balance of the target, after any refill that was due; undefined when it has none. */
  async get(target: CreditTarget): Promise<Credits | undefined> {
    await this.known(target)
    // Read only: a refill or plan balance due is computed, written at the next change or spend.
    const found = await this.balances(this.deps.db, target.account, target.tokenId, false)
    const row = target.tokenId === undefined ? found?.account : found?.token
    return row === undefined ? undefined : view(row)
  }

  /**
   * Sets the balance: `remaining` from now, a new period (leases granted before are not taken
   * back), thresholds re-armed. `refill` absent keeps the current refill, null removes it.
   */
  async set(
    target: CreditTarget,
    input: { remaining: number; refill?: Refill | null },
    actor: Actor = system,
  ): Promise<Credits> {
    await this.known(target)
    return this.deps.db.transaction().execute(async (trx) => {
      const now = this.deps.now()
      const current = await this.row(trx, target)
      const refill =
        input.refill === undefined ? (current ? refillOf(current) : null) : input.refill
      const tokenId = target.tokenId ?? ''
      const row = fresh(target.account, tokenId, input.remaining, refill, now, isoTime(now))
      await creditsRepo.put(trx, row)
      await auditRepo.insert(
        trx,
        this.changed(row, actor, now, { operation: 'set', remaining: input.remaining, refill }),
      )
      return view(row)
    })
  }

  /**
   * Adds `delta` (an increment: to the balance too, so the share spent falls) or takes it off
   * (a decrement: spent, never below 0). 404 when the target has no credits.
   */
  async adjust(target: CreditTarget, delta: number, actor: Actor = system): Promise<Credits> {
    await this.known(target)
    return this.deps.db.transaction().execute(async (trx) => {
      const now = this.deps.now()
      const row = await this.row(trx, target)
      if (row === undefined) throw none(target)
      if (row.remaining + delta > maxCredits || row.balance + delta > maxCredits) {
        throw new ApiError('invalidResources', `credits may not exceed ${maxCredits}`)
      }
      const after = { ...row, changed: isoTime(now) }
      if (delta >= 0) {
        after.remaining += delta
        after.balance += delta
      } else after.remaining = Math.max(0, row.remaining + delta)
      // Changed by an operator: no longer the plan's, it no longer follows the plan.
      after.plan = null
      const { remaining, balance, changed, plan } = after
      await creditsRepo.update(trx, row, { remaining, balance, changed, plan })
      const events = await announce(trx, after, this.deps.config.usage.creditThresholds, actor, now)
      const operation = delta >= 0 ? 'increment' : 'decrement'
      events.push(
        this.changed(after, actor, now, { operation, amount: Math.abs(delta), remaining }),
      )
      await auditRepo.insert(trx, events)
      return view(after)
    })
  }

  /**
   * Removes the balance: the target is no longer metered (an account on a plan with credits
   * gets the plan's afresh at its next use). 404 when it has none.
   */
  async remove(target: CreditTarget, actor: Actor = system): Promise<void> {
    await this.known(target)
    await this.deps.db.transaction().execute(async (trx) => {
      const now = this.deps.now()
      const row = await this.row(trx, target)
      if (row === undefined) throw none(target)
      await creditsRepo.remove(trx, target.account, [row.tokenId])
      await auditRepo.insert(trx, this.changed(row, actor, now, { operation: 'remove' }))
    })
  }

  /**
   * Spends `cost` of the token's balance and the account's, both or none. Undefined when
   * neither carries credits (nothing metered); otherwise whether it was spent and the
   * balances after. A cost of 0 only reads them.
   */
  async spend(
    account: string,
    tokenId: string | undefined,
    cost: number,
    actor: Actor = system,
  ): Promise<Spent | undefined> {
    if (!(await this.mayBeMetered(account, tokenId))) return undefined
    if (cost === 0) {
      // Nothing spent: read without a lock or a transaction, and write nothing.
      const rows = metered(await this.balances(this.deps.db, account, tokenId, false))
      return rows.length === 0 ? undefined : { ok: true, ...amounts(rows) }
    }
    return this.deps.db.transaction().execute(async (trx) => {
      const now = this.deps.now()
      const found = await this.balances(trx, account, tokenId)
      const rows = metered(found)
      if (rows.length === 0) return undefined
      const ok = rows.every((r) => r.remaining >= cost)
      const events: AuditEvent[] = []
      if (ok) {
        for (const row of rows) {
          const remaining = await creditsRepo.take(trx, row, cost)
          // The rows are locked (PostgreSQL) or the database is ours alone (SQLite).
          if (remaining === undefined) throw new Error('a locked balance changed')
          row.remaining = remaining
          events.push(
            ...(await announce(trx, row, this.deps.config.usage.creditThresholds, actor, now)),
          )
        }
        await auditRepo.insert(trx, events)
      }
      return { ok, ...amounts(rows) }
    })
  }

  /**
   * A lease for a verifier: up to `want` credits taken off the token's balance and the
   * account's at once, to spend locally until `expires` (at most a minute, and never past
   * the next refill). `granted` null: neither carries credits.
   */
  async lease(
    account: string,
    tokenId: string | undefined,
    want: number,
    actor: Actor = system,
  ): Promise<Lease> {
    await this.known({ account, tokenId })
    return this.deps.db.transaction().execute(async (trx) => {
      const now = this.deps.now()
      const found = await this.balances(trx, account, tokenId)
      return leaseOf(trx, { account, tokenId }, found, want, now, (row) =>
        announce(trx, row, this.deps.config.usage.creditThresholds, actor, now),
      )
    })
  }

  /**
   * Credits the unspent part of returned leases back, in the caller's transaction (a
   * verifier's report): once per lease, only to the account and token it was granted to, only
   * while the balance is in the period the lease was granted in, never more than was granted
   * nor above the balance. A lease Tessera does not hold (never granted, returned already,
   * pruned a day after it expired) or named with another account or token is skipped.
   */
  returnLeases(trx: Db, returned: readonly Returned[]): Promise<number> {
    return returnLeases(trx, returned, this.deps.log, (account, tokenId) =>
      this.balances(trx, account, tokenId),
    )
  }

  /** Removes the leases that expired more than a day ago (their returns no longer count). */
  async prune(): Promise<number> {
    const cutoff = isoTime(this.deps.now() - leaseKeptMs)
    return creditsRepo.pruneLeases(this.deps.db, cutoff)
  }

  private balances(trx: Db, account: string, tokenId: string | undefined, write = true) {
    return balances(trx, this.deps.catalog, account, tokenId, this.deps.now(), write)
  }

  /** The target's own balance, locked. */
  private async row(trx: Db, target: CreditTarget): Promise<CreditRow | undefined> {
    const found = await this.balances(trx, target.account, target.tokenId)
    return target.tokenId === undefined ? found?.account : found?.token
  }

  /** Whether a spend must look closer: a balance exists, or a plan could give one. */
  private async mayBeMetered(account: string, tokenId: string | undefined) {
    if (this.deps.catalog.plansCarryCredits) return true
    const ids = tokenId === undefined ? [''] : ['', tokenId]
    return (await creditsRepo.read(this.deps.db, account, ids)).length > 0
  }

  /** 404 `No such user` or `Not found`, as the admin API's other routes say them. */
  private async known(target: CreditTarget) {
    const { db } = this.deps
    if ((await creditsRepo.owner(db, target.account)) === undefined) {
      throw new ApiError('noSuchUser')
    }
    if (
      target.tokenId !== undefined &&
      !(await creditsRepo.tokenOf(db, target.account, target.tokenId))
    ) {
      throw new ApiError('notFound')
    }
  }

  private changed(row: CreditRow, actor: Actor, now: number, details: Record<string, unknown>) {
    return auditEvent(now, 'credits.changed', actor, creditTarget(row), row.account, details)
  }
}

const metered = (found: Balances | undefined): CreditRow[] =>
  [found?.token, found?.account].filter((r): r is CreditRow => r !== undefined)

/** The balances' remaining credits, as spends answer them. */
const amounts = (rows: CreditRow[]) => {
  const out: { token?: number; account?: number } = {}
  for (const row of rows) out[row.tokenId === '' ? 'account' : 'token'] = row.remaining
  return out
}

const none = (target: CreditTarget) =>
  new ApiError(
    'notFound',
    target.tokenId === undefined
      ? 'the account carries no credits'
      : 'the token carries no credits',
  )
