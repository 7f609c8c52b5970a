import {
  costOf,
  type RefusedToken,
  refusals,
  type Verification,
  type VerifyOptions,
} from './answers.js'
import type { Pool } from './credits.js'
import { check, type Entry } from './entry.js'
import type { EntryCache } from './entry-cache.js'
import type { Metering } from './metering.js'
import { outcomeOfReason, valid } from './outcomes.js'

/**
 * One verification decided from a cached answer, and counted once: its rate limits first (a
 * verification refused by one spends no credit), then its credits; short of credits, what the
 * limits gave goes back to them. In process when the leases held here suffice, else with a
 * lease from Tessera. A refusal also leaves a row for the verification log: `started` is
 * performance.now() when the verification began (undefined: not timed), `options` the
 * request's.
 */
export class Decisions {
  constructor(
    private readonly metering: Metering,
    private readonly cache: EntryCache,
    private readonly closed: () => boolean,
  ) {}

  /** An entry's decision, counted; undefined when its limits or credits need a lease. */
  decide(
    entry: Entry,
    answer: Verification,
    options: VerifyOptions | undefined,
    now: number,
    started: number | undefined,
  ): Verification | undefined {
    const meter = entry.meter
    if (!answer.valid) {
      const outcome = outcomeOfReason[answer.reason]
      if (meter !== undefined) this.metering.refuse(meter, outcome, now, options, started)
      return answer
    }
    const limits = entry.limits
    if (limits !== undefined) {
      const took = this.metering.limits.tryTake(limits, entry.token)
      if (took === undefined) return undefined
      if (took !== true) return this.limited(entry, took, options, started)
    }
    const pool = entry.pool
    if (pool !== undefined && !this.spendHere(pool, options)) {
      // Not spent: what the limits gave goes back to them.
      if (limits !== undefined) this.metering.limits.giveBack(limits)
      if (!this.metering.credits.empty(pool)) return undefined
      const exhausted = outcomeOfReason.CreditsExhausted
      if (meter !== undefined) this.metering.refuse(meter, exhausted, now, options, started)
      return refusals.CreditsExhausted
    }
    if (meter !== undefined) this.metering.counter.count(meter, valid, now)
    return answer
  }

  /** A valid answer whose limits or credits need a lease from Tessera. */
  async withLeases(
    entry: Entry,
    options: VerifyOptions | undefined,
    started: number,
  ): Promise<Verification> {
    const { limits, pool } = entry
    if (limits !== undefined) {
      const took = await this.metering.limits.take(limits, entry.token)
      if (took === true && this.closed()) this.metering.limits.giveBack(limits)
      if (took === 'unavailable' || this.closed()) return refusals.TesseraUnavailable
      if (took !== true) {
        return 'gone' in took
          ? this.gone(entry, took.gone, options, started)
          : this.limited(entry, took, options, started)
      }
    }
    const cost = costOf(options)
    if (pool !== undefined && cost > 0) {
      const spent = await this.metering.credits.spend(pool, cost)
      if (spent !== 'spent' && limits !== undefined) this.metering.limits.giveBack(limits)
      if (spent === 'unavailable') return refusals.TesseraUnavailable
      if (spent === 'exhausted') {
        return this.count(entry, refusals.CreditsExhausted, options, started)
      }
    }
    return this.count(entry, check(entry, options), options, started)
  }

  /** Refused by a rate limit: counted rate_limited, by the limit's name. */
  private limited(
    entry: Entry,
    refusal: RefusedToken,
    options: VerifyOptions | undefined,
    started: number | undefined,
  ): RefusedToken {
    const meter = entry.meter
    if (meter === undefined) return refusal
    const outcome = outcomeOfReason.RateLimited
    this.metering.refuse(meter, outcome, Date.now(), options, started, refusal.ratelimit)
    return refusal
  }

  /** Tessera said, asked for a lease, that the token is not valid now: its answer is dropped. */
  private gone(
    entry: Entry,
    code: string,
    options: VerifyOptions | undefined,
    started: number,
  ): RefusedToken {
    this.cache.delete(entry)
    const refusal =
      code === 'TokenExpired' || code === 'TokenMalformed' || code === 'TokenInvalid'
        ? refusals[code]
        : refusals.TokenRevoked
    return this.count(entry, refusal, options, started)
  }

  /** Spends the cost from the leases held here; false when they hold too little. */
  private spendHere(pool: Pool, options: VerifyOptions | undefined): boolean {
    const cost = costOf(options)
    return cost === 0 || this.metering.credits.trySpend(pool, cost)
  }

  private count<T extends Verification>(
    entry: Entry,
    answer: T,
    options: VerifyOptions | undefined,
    started: number,
  ): T {
    const meter = entry.meter
    if (meter === undefined) return answer
    if (answer.valid) this.metering.counter.count(meter, valid, Date.now())
    else this.metering.refuse(meter, outcomeOfReason[answer.reason], Date.now(), options, started)
    return answer
  }
}
