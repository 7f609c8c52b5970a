import type { Logger } from 'pino'
import {
  grantOf,
  type LeaseCounter,
  LeasingRateLimiter,
  leaseReserve,
  leaseShare,
} from './leases.js'

/** A worker asks the primary for a grant: the arguments of `LeaseCounter.take`. */
export interface LeaseRequest {
  tessera: 'lease'
  id: number
  key: string
  ttl: number
  limit: number
  demand: number
  want: number
}

/** The primary's answer to the request of the same id. */
export interface LeaseReply {
  tessera: 'lease'
  id: number
  grant: number
}

const isLease = (m: unknown): m is Record<string, unknown> =>
  typeof m === 'object' && m !== null && (m as { tessera?: unknown }).tessera === 'lease'

/** Whether an IPC message is a worker's lease request (the channel carries other messages too). */
export function isLeaseRequest(m: unknown): m is LeaseRequest {
  return (
    isLease(m) &&
    typeof m.id === 'number' &&
    typeof m.key === 'string' &&
    ['ttl', 'limit', 'demand', 'want'].every((k) => typeof m[k] === 'number')
  )
}

function isLeaseReply(m: unknown): m is LeaseReply {
  return isLease(m) && typeof m.id === 'number' && typeof m.grant === 'number'
}

/**
 * The primary's count of every window key its workers lease from, as Redis keeps them for
 * instances: a request is answered in one synchronous step, so the primary's event loop makes
 * it as atomic as the Lua script. The primary wires it to each worker:
 * `worker.on('message', (m) => isLeaseRequest(m) && worker.send({ tessera: 'lease', id: m.id,
 * grant: ledger.answer(m) }))`.
 */
export class LeaseLedger {
  private readonly counts = new Map<string, { used: number; expires: number }>()
  private sweepAt = 0

  constructor(private readonly clock: () => number = Date.now) {}

  /** Applies `grantOf` to the key's count and returns the grant. */
  answer(req: LeaseRequest): number {
    const now = this.clock()
    this.sweep(now)
    const entry = this.counts.get(req.key)
    const live = entry !== undefined && entry.expires > now ? entry : undefined
    const used = live?.used ?? 0
    const grant = grantOf(used, req.limit, req.demand, req.want, leaseReserve, leaseShare)
    if (grant <= 0) return 0
    // Like SET EX then INCRBY: the expiry is set by the window's first grant and kept after.
    if (live === undefined) this.counts.set(req.key, { used: grant, expires: now + req.ttl * 1000 })
    else live.used += grant
    return grant
  }

  /** What has been granted for `key` (window included) and not expired. */
  used(key: string): number {
    const entry = this.counts.get(key)
    return entry !== undefined && entry.expires > this.clock() ? entry.used : 0
  }

  /** Keys held, expired or not yet swept. */
  get size(): number {
    return this.counts.size
  }

  /**
   * Keys carry their window, so a past window's key is never asked for again: dropped at most
   * once a second, lazily, which needs no timer to stop when the primary shuts down.
   */
  private sweep(now: number) {
    if (now < this.sweepAt) return
    this.sweepAt = now + 1000
    for (const [key, entry] of this.counts) if (entry.expires <= now) this.counts.delete(key)
  }
}

type MessageListener = (message: unknown) => void

/** What a worker needs of its IPC channel to the primary: `process` in a cluster worker. */
export interface LeaseChannel {
  readonly connected: boolean
  /** Optional as on `process`, which has none without an IPC channel. */
  send?(message: unknown): boolean
  on(event: 'message', listener: MessageListener): unknown
  off?(event: 'message', listener: MessageListener): unknown
}

/**
 * Beyond this, a take is given up and the worker counts in process. The primary is on the same
 * machine and answers in microseconds: a take this late means the worker's own event loop
 * stalled (a synchronous wait for SQLite's write lock) or the primary is stuck.
 */
const replyTimeoutMs = 2_000
interface Pending {
  resolve: (grant: number) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
}

/** Takes from the primary's ledger over IPC, matching each reply to its request by id. */
class ChannelLeaseCounter implements LeaseCounter {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly listener: MessageListener = (m) => this.receive(m)
  /** Called on each reply: the primary is there. */
  answered = () => {}

  constructor(private readonly channel: LeaseChannel) {
    channel.on('message', this.listener)
  }

  get ready() {
    return this.channel.connected === true && this.channel.send !== undefined
  }

  take(key: string, ttl: number, limit: number, demand: number, want: number): Promise<number> {
    // Sending on a closed channel would emit an 'error' on `process`: refused here instead.
    if (!this.ready) return Promise.reject(new Error('no IPC channel to the primary'))
    const id = this.nextId++
    const request: LeaseRequest = { tessera: 'lease', id, key, ttl, limit, demand, want }
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Timers run before the loop reads IPC: after a stall of the worker's own loop, the
        // reply may be waiting in the pipe. It is read first, and wins (receive clears this).
        setImmediate(() => {
          if (this.pending.get(id)?.timer !== timer) return
          // A reply later still is dropped: the primary counted a grant no one spends, which
          // can only refuse early, never let more than the limit pass.
          this.pending.delete(id)
          reject(new Error(`the primary did not answer a lease within ${replyTimeoutMs} ms`))
        })
      }, replyTimeoutMs)
      timer.unref()
      this.pending.set(id, { resolve, reject, timer })
      this.channel.send?.(request)
    })
  }

  private receive(m: unknown) {
    if (!isLeaseReply(m)) return
    const pending = this.pending.get(m.id)
    if (pending === undefined) return
    this.pending.delete(m.id)
    clearTimeout(pending.timer)
    this.answered()
    pending.resolve(m.grant)
  }

  async close() {
    this.channel.off?.('message', this.listener)
    for (const p of this.pending.values()) {
      clearTimeout(p.timer)
      p.reject(new Error('closed'))
    }
    this.pending.clear()
  }
}

/**
 * A worker's rate limiter: leases from the primary's `LeaseLedger` exactly as instances lease
 * from Redis (see `LeasingRateLimiter`), so the workers of one machine share one count. Without
 * a channel, or when a take gets no answer in time, it counts in process, and shares again when
 * the primary answers.
 */
export class WorkerRateLimiter extends LeasingRateLimiter {
  constructor(channel: LeaseChannel, limit: number, log: Logger, intervalS = 60) {
    const counter = new ChannelLeaseCounter(channel)
    super(counter, limit, log, { keyPrefix: '', peer: 'the primary', each: 'worker' }, intervalS)
    counter.answered = () => this.regained()
  }
}
