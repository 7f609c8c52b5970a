import type { LimitRule, RateLimiter, RateLimitResult } from '../ratelimit/limiter.js'
import type { Validation } from '../tokens/validator.js'
import { outcomeOfCode } from '../usage/attribution.js'
import type { Meter } from '../usage/meter.js'
import { outcomeIndex } from '../usage/outcomes.js'
import type { Applied, LimitBook } from './limits.js'
import { type RequestFacts, rowOf } from './log.js'
import type { VerificationLog } from './log-writer.js'

/** A valid token's validation. */
export type Valid = Extract<Validation, { code: 'TokenValid' }>

/** One limit as a request left it. */
export interface LimitState {
  readonly applied: Applied
  readonly result: RateLimitResult
}

/**
 * What the limits said of one request. `applied` and `result` are the limit closest to refusing
 * (the first that refused, when one did): what the IETF RateLimit headers describe; `requests`
 * is the `requests` limit, what Mapbox's X-Rate-Limit-* headers describe.
 */
export interface Verdict extends LimitState {
  readonly allowed: boolean
  readonly requests: RateLimitResult
  readonly requestsRule: LimitRule
  /** Every limit, in order, when more than one applied (else the one is `applied`). */
  readonly states?: readonly LimitState[]
  /** When it was decided (epoch ms): a reset's seconds are counted from it. */
  readonly at: number
}

/** Every limit of a verdict, in order. */
export const statesOf = (v: Verdict): readonly LimitState[] => v.states ?? [v]

export interface CheckpointDeps {
  limiter: RateLimiter
  usage: Meter
  book: LimitBook
  now: () => number
  /** The verification log: a row per verification whose request's facts are given. */
  log?: VerificationLog
}

/**
 * Where a verification is decided (docs/ratelimits.md): the only caller, during one, of the
 * rate limiter, of the usage meter's count and of credit spending. HTTP reads the request,
 * writes headers from the verdict and turns a refusal into the error table's answer.
 *
 * A request passes only if every limit on it passes; one refused consumes none (what the others
 * took is given back). Each request is counted in the usage exactly once, here. Answers at once
 * when the limiter does (the memory limiter, a warm lease): no promise on a warm request.
 */
export class Checkpoint {
  constructor(private readonly deps: CheckpointDeps) {}

  get book(): LimitBook {
    return this.deps.book
  }

  /**
   * A valid token's request, against every limit on it: counted rate_limited when refused, else
   * as `passed` (its code's outcome, valid, unless given: scope_missing).
   */
  admit(validation: Valid, passed?: number, facts?: RequestFacts): Verdict | Promise<Verdict> {
    const gate = this.deps.book.gateOf(validation.principal, validation.account)
    const verdict = this.apply(gate.list, gate.requests)
    return verdict instanceof Promise
      ? verdict.then((v) => this.counted(validation, v, passed, facts))
      : this.counted(validation, verdict, passed, facts)
  }

  /**
   * A valid token's limits alone, counted nowhere (the caller counts: introspection, which may
   * refuse it yet for credits and then gives back what it took with `release`).
   */
  limits(validation: Valid): Verdict | Promise<Verdict> {
    const gate = this.deps.book.gateOf(validation.principal, validation.account)
    return this.apply(gate.list, gate.requests)
  }

  /**
   * A request without a valid token, or refused before its limits: counted by its outcome (its
   * code's unless given), then against its client address's `requests` limit.
   */
  address(
    validation: Validation | undefined,
    ip: string | undefined,
    outcome?: number,
    facts?: RequestFacts,
  ): Verdict | Promise<Verdict> {
    if (validation !== undefined) {
      this.deps.usage.countValidation(validation, outcome)
      if (facts !== undefined) this.logged(validation, outcome, null, facts)
    }
    const applied = this.deps.book.address(ip)
    return this.apply([applied], applied)
  }

  /** An anonymous report's limit (leak reports): the service's `requests` per address. */
  anonymous(ip: string, kind: string): Verdict | Promise<Verdict> {
    const applied = this.deps.book.address(ip, kind)
    return this.apply([applied], applied)
  }

  /** An identifier's limit of the namespace API, at `cost`. */
  identifier(applied: Applied): Verdict | Promise<Verdict> {
    return this.apply([applied], applied)
  }

  /** Gives back what a passed verdict took (a request refused after its limits passed). */
  release(verdict: Verdict): void {
    if (!verdict.allowed) return
    for (const { applied } of statesOf(verdict)) {
      this.deps.limiter.refund(applied.key, verdict.at, applied.rule, applied.cost)
    }
  }

  /** Counts one verification by its outcome (introspection, which decides it). */
  count(validation: Validation, outcome?: number, facts?: RequestFacts): void {
    this.deps.usage.countValidation(validation, outcome)
    if (facts !== undefined) this.logged(validation, outcome, null, facts)
  }

  /** Counts one verification refused by the limit `name` (introspection, which decides it). */
  countLimited(validation: Validation, name: string, facts?: RequestFacts): void {
    this.deps.usage.countLimited(validation, name)
    if (facts !== undefined) this.logged(validation, outcomeIndex.rate_limited, name, facts)
  }

  private counted(
    validation: Valid,
    verdict: Verdict,
    passed: number | undefined,
    facts: RequestFacts | undefined,
  ): Verdict {
    // Refused: rate_limited, and by the name of the limit that refused (the Usage split).
    if (verdict.allowed) {
      this.deps.usage.countValidation(validation, passed)
      if (facts !== undefined) this.logged(validation, passed, null, facts)
    } else {
      const { name } = verdict.applied.rule
      this.deps.usage.countLimited(validation, name)
      if (facts !== undefined) this.logged(validation, outcomeIndex.rate_limited, name, facts)
    }
    return verdict
  }

  /** The verification's row, when the log keeps its outcome (its code's unless given). */
  private logged(
    validation: Validation,
    outcome: number | undefined,
    limit: string | null,
    facts: RequestFacts,
  ) {
    const { log } = this.deps
    const o = outcome ?? outcomeOfCode[validation.code]
    const kept = log?.keeps(o) === true
    if (!kept && facts.traced !== true) return
    const row = rowOf(validation, o, limit, facts, this.deps.now())
    facts.row = row
    if (kept) log?.add(row)
  }

  private apply(list: readonly Applied[], requests: Applied): Verdict | Promise<Verdict> {
    const { limiter } = this.deps
    const at = this.deps.now()
    if (list.length === 1) {
      const applied = list[0] as Applied
      const result = limiter.hit(applied.key, at, applied.rule, applied.cost)
      // No closure when the limiter answers at once.
      return result instanceof Promise
        ? result.then((r) => one(applied, r, at))
        : one(applied, result, at)
    }
    let waits = false
    const results = list.map((a) => {
      const r = limiter.hit(a.key, at, a.rule, a.cost)
      if (r instanceof Promise) waits = true
      return r
    })
    if (!waits) return this.many(list, results as RateLimitResult[], requests, at)
    return Promise.all(results).then((rs) => this.many(list, rs, requests, at))
  }

  private many(
    list: readonly Applied[],
    results: RateLimitResult[],
    requests: Applied,
    at: number,
  ): Verdict {
    let refused = -1
    let closest = 0
    let least = Number.POSITIVE_INFINITY
    for (let i = 0; i < results.length; i++) {
      const r = results[i] as RateLimitResult
      if (!r.allowed && refused === -1) refused = i
      const share = r.remaining / r.limit
      if (share < least) {
        least = share
        closest = i
      }
    }
    if (refused !== -1) {
      // One refused request consumes none: each limit that passed gets its cost back.
      closest = refused
      for (let i = 0; i < results.length; i++) {
        const a = list[i] as Applied
        const r = results[i] as RateLimitResult
        if (r.allowed && a.cost > 0) {
          this.deps.limiter.refund(a.key, at, a.rule, a.cost)
          results[i] = { ...r, remaining: Math.min(r.limit, r.remaining + a.cost) }
        }
      }
    }
    const states: LimitState[] = list.map((applied, i) => ({
      applied,
      result: results[i] as RateLimitResult,
    }))
    for (const { applied, result } of states) {
      if (result.allowed) applied.counts.allowed++
      else applied.counts.limited++
    }
    const near = states[closest] as LimitState
    const index = list.indexOf(requests)
    const requestsResult = (states[index === -1 ? 0 : index] as LimitState).result
    return {
      allowed: refused === -1,
      applied: near.applied,
      result: near.result,
      requests: requestsResult,
      requestsRule: requests.rule,
      states,
      at,
    }
  }
}

function one(applied: Applied, result: RateLimitResult, at: number): Verdict {
  if (result.allowed) applied.counts.allowed++
  else applied.counts.limited++
  return {
    allowed: result.allowed,
    applied,
    result,
    requests: result,
    requestsRule: applied.rule,
    at,
  }
}
