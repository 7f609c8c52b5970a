import type { ReturnedLease } from './reporter.js'
import type { Transport } from './transport.js'

export const leasePath = '/admin/v1/credits/leases'

/** One lease of credits Tessera granted: spent here until it ends, then handed back. */
interface Held {
  readonly lease: string
  left: number
  /**
   * On the monotonic clock (`performance.now()`): when the request began plus Tessera's
   * `ttlMs` (at most a minute, never past the next refill). The wall clock is not read, so a
   * verifier's clock set apart from Tessera's neither ends leases early nor spends them late.
   */
  readonly endsAt: number
}

/**
 * The credits held here for a token (its own balance and its account's, leased together: a
 * grant comes off both), or for an account's tk (its account's balance).
 */
export class Pool {
  readonly held: Held[] = []
  available = 0
  /** What the next lease asks for: doubles while leases run out, halves when they expire. */
  want: number
  /** Tessera said the balance is gone (granted nothing): refuse without asking until then. */
  emptyUntil = 0
  /** Tessera said this balance carries no credits (granted null). */
  unmetered = false
  asking: Promise<void> | undefined

  constructor(
    readonly account: string,
    readonly token: string | undefined,
    firstWant: number,
  ) {
    this.want = firstWant
  }
}

export type Spent = 'spent' | 'exhausted' | 'unavailable'

/** The clock of leases: monotonic milliseconds (the global's, which test clocks can fake). */
export const monotonic = (): number => performance.now()

export interface CreditOptions {
  /** The first lease asked for a balance; later ones follow how fast it is spent. */
  firstLease: number
  /** The most one lease asks for. */
  maxLease: number
  /** How long a balance Tessera granted nothing of is refused without asking again. */
  emptyForMs: number
}

/**
 * Spends credits from leases (`POST /admin/v1/credits/leases`): Tessera takes a grant off the
 * balance at once, so nothing is spent twice; what a lease has left when it ends is handed back
 * with the next report.
 */
export class Credits {
  /** Pools by token, so that answers share them (pruned of idle pools). */
  private readonly pools = new Map<string, Pool>()
  /** The pools holding leases, whether still shared or not. */
  private readonly holding = new Set<Pool>()
  /** Closing: no lease is asked any more (what is held is handed back at close). */
  private closed = false

  constructor(
    private readonly transport: Transport,
    private readonly giveBack: (lease: ReturnedLease) => void,
    private readonly onError: (err: Error) => void,
    private readonly options: CreditOptions,
  ) {}

  /** The pool of a token (or an account's tk: no token), shared by the answers naming it. */
  pool(account: string, token: string | undefined): Pool {
    const name = token === undefined ? `a\n${account}` : `t\n${account}\n${token}`
    let pool = this.pools.get(name)
    if (pool === undefined) {
      pool = new Pool(account, token, this.options.firstLease)
      this.pools.set(name, pool)
    }
    return pool
  }

  /** From now on no lease is asked: spends needing one are answered 'unavailable'. */
  close(): void {
    this.closed = true
  }

  /** Spends `cost` from what the pool holds here, without a round trip; false if short. */
  trySpend(p: Pool, cost: number, now = monotonic()): boolean {
    if (p.unmetered) return true
    if (p.held.length > 0 && (p.held[0] as Held).endsAt <= now) this.expire(p, now)
    if (p.available < cost) return false
    this.take(p, cost, now)
    return true
  }

  /** Tessera granted nothing of this balance a moment ago: refuse without asking. */
  empty(p: Pool, now = monotonic()): boolean {
    return !p.unmetered && p.available === 0 && now < p.emptyUntil
  }

  /** Spends `cost`, asking Tessera for leases as needed. */
  async spend(p: Pool, cost: number): Promise<Spent> {
    // Concurrent callers may take what a lease brought: a few rounds, then refused.
    for (let round = 0; round < 8; round++) {
      // Closing: what a lease brought now goes back whole at close.
      if (this.closed) return 'unavailable'
      const now = monotonic()
      if (this.trySpend(p, cost, now)) return 'spent'
      if (now < p.emptyUntil) return 'exhausted'
      try {
        await this.ask(p, cost)
      } catch {
        return 'unavailable'
      }
    }
    return 'exhausted'
  }

  /** Hands back what ended leases left (and, with `all`, every lease: at close). */
  sweep(now = monotonic(), all = false): void {
    for (const p of this.holding) {
      this.expire(p, all ? Number.POSITIVE_INFINITY : now)
      if (p.held.length === 0) this.holding.delete(p)
    }
    for (const [name, p] of this.pools) {
      if (p.held.length === 0 && p.asking === undefined && now >= p.emptyUntil) {
        this.pools.delete(name)
      }
    }
  }

  /**
   * Credits changed at Tessera (`credits.changed`: a set, an increment, a removal...): the
   * leases of the token (of every token of the account, for the account's balance) are handed
   * back, since after a set they belong to a period that is over (Tessera then ignores the
   * return), and a balance refused a moment ago is asked again.
   */
  changed(account: string, token: string | undefined): void {
    for (const p of new Set([...this.pools.values(), ...this.holding])) {
      if (p.account === account && (token === undefined || p.token === token)) {
        this.expire(p, Number.POSITIVE_INFINITY)
        p.emptyUntil = 0
        p.unmetered = false
      }
    }
  }

  /** Settles once no lease request is on its way (what they bring can then be handed back). */
  async idle(): Promise<void> {
    const asking = [...this.pools.values(), ...this.holding].map((p) => p.asking)
    await Promise.allSettled(asking)
  }

  /** Credits held here, over every lease. */
  held(): number {
    let n = 0
    for (const p of this.holding) n += p.available
    return n
  }

  private take(p: Pool, cost: number, now: number): void {
    p.available -= cost
    let owed = cost
    for (const h of p.held) {
      const n = Math.min(owed, h.left)
      h.left -= n
      owed -= n
      if (owed === 0) break
    }
    while (p.held.length > 0 && (p.held[0] as Held).left === 0) p.held.shift()
    // Running low: the next lease is asked for in the background.
    if (!this.closed && p.asking === undefined && p.available < p.want / 2 && now >= p.emptyUntil) {
      p.want = Math.min(p.want * 2, this.options.maxLease)
      this.ask(p, cost).catch(() => {})
    }
  }

  private expire(p: Pool, now: number): void {
    while (p.held.length > 0 && (p.held[0] as Held).endsAt <= now) {
      const h = p.held.shift() as Held
      p.available -= h.left
      if (h.left > 0) {
        p.want = Math.max(1, Math.ceil(p.want / 2))
        this.giveBack({ ...this.target(p), amount: h.left, lease: h.lease })
      }
    }
  }

  private target(p: Pool): { account: string; token?: string } {
    return p.token === undefined ? { account: p.account } : { account: p.account, token: p.token }
  }

  /** One lease request per pool at a time; concurrent callers wait for the same one. */
  private ask(p: Pool, cost: number): Promise<void> {
    p.asking ??= this.request(p, Math.max(cost, p.want)).finally(() => {
      p.asking = undefined
    })
    return p.asking
  }

  private async request(p: Pool, want: number): Promise<void> {
    const body = { ...this.target(p), want }
    let answer: LeaseAnswer
    const asked = monotonic()
    try {
      answer = (await this.transport.postJson(leasePath, body)) as LeaseAnswer
    } catch (err) {
      this.onError(err as Error)
      throw err
    }
    const now = monotonic()
    if (answer.granted === null) {
      p.unmetered = true
      return
    }
    const granted = typeof answer.granted === 'number' ? answer.granted : 0
    const expires = asked + ttlOf(answer)
    if (granted > 0 && typeof answer.lease === 'string' && !(expires > now)) {
      // Already over (the answer took its whole time to come): handed back unspent.
      this.giveBack({ ...this.target(p), amount: granted, lease: answer.lease })
    }
    if (granted <= 0 || typeof answer.lease !== 'string' || !(expires > now)) {
      // Tessera's answer holds until `expires`; asked again sooner, as leases may come back.
      p.emptyUntil = Math.min(now + this.options.emptyForMs, expires > now ? expires : Infinity)
      return
    }
    const endsAt = Math.min(expires, asked + 60_000)
    // Kept in order of their end, so the first to end is spent first.
    let at = p.held.length
    while (at > 0 && (p.held[at - 1] as Held).endsAt > endsAt) at--
    p.held.splice(at, 0, { lease: answer.lease, left: granted, endsAt })
    p.available += granted
    this.holding.add(p)
  }
}

interface LeaseAnswer {
  granted?: unknown
  lease?: unknown
  expires?: unknown
  ttlMs?: unknown
}

/**
 * How long a lease (or an answer of 0 granted) holds from when it was asked: Tessera's `ttlMs`
 * (its own `expires` less its own now); from a Tessera without it, `expires` read on this clock.
 */
function ttlOf(answer: LeaseAnswer): number {
  if (typeof answer.ttlMs === 'number' && Number.isFinite(answer.ttlMs)) return answer.ttlMs
  const expires = typeof answer.expires === 'string' ? Date.parse(answer.expires) : Number.NaN
  return expires - Date.now()
}
