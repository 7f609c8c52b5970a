import type { FailureReason, RefusedToken } from './answers.js'
import { monotonic } from './credits.js'
import { UnexpectedAnswerError } from './introspection.js'
import type { Transport } from './transport.js'

export const ratelimitLeasePath = '/admin/v1/ratelimit-leases'

/** One limit on a token as held here: the block Tessera granted of its current window. */
interface Held {
  readonly name: string
  /** What one verification takes of it (0: it never refuses). */
  cost: number
  duration: number
  /** Units granted and not spent yet, of the window that ends at `endsAt`. */
  left: number
  /**
   * On the monotonic clock: when the window ends (the request's start plus Tessera's `ttlMs`).
   * The wall clock is not read, so a verifier's clock set apart from Tessera's changes nothing.
   */
  endsAt: number
  /** Tessera said less than one verification is left beyond what it granted: until then. */
  emptyUntil: number
  /** Its refusal, shared and frozen: refusing allocates nothing. */
  readonly refusal: RefusedToken
}

/**
 * The limits held here for a token (a pk's or sk's; an account's tks share one), with the same
 * limits as Tessera last listed them (`shape`: a change of them makes a new pool).
 */
export class LimitPool {
  held: Held[] = []
  /** The verifications the next lease asks for: doubles while leases run low, halves when lost. */
  want: number
  asking: Promise<string | undefined> | undefined
  /** The token string of the lease request on its way (its answer may say it is not valid). */
  askingFor: string | undefined

  constructor(
    readonly name: string,
    firstWant: number,
  ) {
    this.want = firstWant
  }
}

/** A verification's limits: taken (true), refused (a refusal), or a lease is needed (undefined). */
export type Took = true | RefusedToken | undefined

/** What taking with leases comes to: taken, refused, the token gone (Tessera's code), or no answer. */
export type Taken = true | RefusedToken | { gone: string } | 'unavailable'

export interface LimitOptions {
  firstLease: number
  maxLease: number
}

const limitedRefusal = (ratelimit: string): RefusedToken =>
  Object.freeze({ valid: false, reason: 'RateLimited' as FailureReason, ratelimit })

/**
 * Applies a token's rate limits in process (docs: the README's "Rate limits"): Tessera grants a
 * block of every limit (`POST /admin/v1/ratelimit-leases`), taken off the same count as its own
 * verifications, and each verification here takes its cost of every block. Passes never exceed a
 * limit, across every verifier and Tessera; what a block has left when its window ends is lost
 * (never handed back), so a refusal may come early by at most the blocks left unspent.
 */
export class RateLimits {
  private readonly pools = new Map<string, LimitPool>()
  private closed = false

  constructor(
    private readonly transport: Transport,
    private readonly onError: (err: Error) => void,
    private readonly options: LimitOptions,
  ) {}

  /** The pool of a token (a tk: its account's), for the limits `shape` names. */
  pool(account: string, token: string | undefined, shape: string): LimitPool {
    const name = `${account}\n${token ?? ''}\n${shape}`
    let pool = this.pools.get(name)
    if (pool === undefined) {
      pool = new LimitPool(name, this.options.firstLease)
      this.pools.set(name, pool)
    }
    return pool
  }

  /** From now on no lease is asked: takes needing one are answered 'unavailable'. */
  close(): void {
    this.closed = true
  }

  /** Takes one verification of every limit from what is held here, without a round trip. */
  tryTake(p: LimitPool, token: string, now = monotonic()): Took {
    const held = p.held
    if (held.length === 0) return undefined
    let short = false
    for (const h of held) {
      if (h.cost === 0) continue
      if (now >= h.endsAt && h.left > 0) {
        // The window is over: what was left of its block is lost, and the next block smaller.
        h.left = 0
        p.want = Math.max(1, Math.ceil(p.want / 2))
      }
      if (h.left < h.cost) {
        if (now < h.emptyUntil) return h.refusal
        short = true
      }
    }
    if (short) return undefined
    for (const h of held) h.left -= h.cost
    if (!this.closed && p.asking === undefined && this.low(p, now)) {
      p.want = Math.min(p.want * 2, this.options.maxLease)
      this.ask(p, token).catch(() => {})
    }
    return true
  }

  /** Gives back what a verification took (refused after its limits: credits were short). */
  giveBack(p: LimitPool): void {
    for (const h of p.held) h.left += h.cost
  }

  /**
   * Takes one verification, asking Tessera for a lease as needed: true; a refusal (a limit
   * has nothing left); `gone` (Tessera says the token is not valid now); 'unavailable'.
   */
  async take(p: LimitPool, token: string): Promise<Taken> {
    // Concurrent callers may take what a lease brought: a few rounds, then refused.
    for (let round = 0; round < 8; round++) {
      if (this.closed) return 'unavailable'
      const took = this.tryTake(p, token)
      if (took !== undefined) return took
      let code: string | undefined
      try {
        code = await this.ask(p, token)
      } catch {
        return 'unavailable'
      }
      if (code !== undefined) return { gone: code }
    }
    const short = p.held.find((h) => h.cost > 0 && h.left < h.cost)
    return short?.refusal ?? 'unavailable'
  }

  /** Drops the pools that hold nothing (none is on its way, none known empty). */
  sweep(now = monotonic()): void {
    for (const [name, p] of this.pools) {
      const idle = p.held.every((h) => h.left === 0 || now >= h.endsAt)
      if (idle && p.asking === undefined && p.held.every((h) => now >= h.emptyUntil)) {
        this.pools.delete(name)
      }
    }
  }

  /** Settles once no lease request is on its way. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((p) => p.asking))
  }

  /** Some limit holds less than half a lease, and none is known empty: ask ahead. */
  private low(p: LimitPool, now: number): boolean {
    let low = false
    for (const h of p.held) {
      if (h.cost === 0) continue
      if (now < h.emptyUntil) return false
      if (h.left < h.cost * Math.ceil(p.want / 2)) low = true
    }
    return low
  }

  /**
   * One lease request per pool at a time; concurrent callers wait for the same one. Answers the
   * code Tessera gave for `token` when it is not valid now.
   */
  private ask(p: LimitPool, token: string): Promise<string | undefined> {
    if (p.asking !== undefined) {
      const mine = p.askingFor === token
      return p.asking.then((code) => (mine ? code : undefined))
    }
    p.askingFor = token
    p.asking = this.request(p, token).finally(() => {
      p.asking = undefined
      p.askingFor = undefined
    })
    return p.asking
  }

  private async request(p: LimitPool, token: string): Promise<string | undefined> {
    const asked = monotonic()
    let answer: LeaseAnswer
    try {
      answer = readLease(await this.transport.postJson(ratelimitLeasePath, { token, want: p.want }))
    } catch (err) {
      this.onError(err as Error)
      throw err
    }
    if (answer.code !== undefined) return answer.code
    const list = answer.ratelimits
    if (list.length !== p.held.length || list.some((l, i) => l.name !== p.held[i]?.name)) {
      // Other limits than those held (they changed): start afresh with Tessera's.
      p.held = list.map((l) => ({
        name: l.name,
        cost: l.cost,
        duration: l.duration,
        left: 0,
        endsAt: 0,
        emptyUntil: 0,
        refusal: limitedRefusal(l.name),
      }))
    }
    list.forEach((l, i) => {
      const h = p.held[i] as Held
      const endsAt = asked + l.ttlMs
      // A block of another window than the one held: what was held is of an ended window.
      if (Math.abs(endsAt - h.endsAt) >= l.duration / 2) h.left = 0
      h.left += l.granted
      h.cost = l.cost
      h.duration = l.duration
      h.endsAt = endsAt
      h.emptyUntil = l.cost > 0 && l.remaining < l.cost ? endsAt : 0
    })
    return undefined
  }
}

interface LeasedLimit {
  name: string
  remaining: number
  duration: number
  cost: number
  granted: number
  ttlMs: number
}

interface LeaseAnswer {
  code?: string
  ratelimits: LeasedLimit[]
}

const whole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v)

/** A lease answer of the expected shape; throws UnexpectedAnswerError. */
function readLease(body: unknown): LeaseAnswer {
  const b = body as { code?: unknown; ratelimits?: unknown } | null
  if (typeof b !== 'object' || b === null || !Array.isArray(b.ratelimits)) {
    throw new UnexpectedAnswerError('a rate-limit lease answered no "ratelimits"')
  }
  if (typeof b.code === 'string') return { code: b.code, ratelimits: [] }
  const list = b.ratelimits as Record<string, unknown>[]
  const fields = ['remaining', 'duration', 'cost', 'granted', 'ttlMs']
  if (!list.every((l) => typeof l?.name === 'string' && fields.every((f) => whole(l[f])))) {
    throw new UnexpectedAnswerError('a rate-limit lease answered a limit of an unknown shape')
  }
  return { ratelimits: list as unknown as LeasedLimit[] }
}
