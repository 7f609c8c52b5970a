import type { Logger } from 'pino'
import { type IpcChannel, IpcRequests } from './ipc.js'
import {
  type Grant,
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
  /** The window's count after the grant. */
  used: number
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
  return (
    isLease(m) &&
    typeof m.id === 'number' &&
    typeof m.grant === 'number' &&
    typeof m.used === 'number'
  )
}

/**
 * The primary's count of every window key its workers lease from, as Redis keeps them for
 * instances: a request is answered in one synchronous step, so the primary's event loop makes
 * it as atomic as the Lua script. The primary wires it to each worker:
 * `worker.on('message', (m) => isLeaseRequest(m) && worker.send({ tessera: 'lease', id: m.id,
 * ...ledger.answer(m) }))`.
 */
export class LeaseLedger {
  private readonly counts = new Map<string, { used: number; expires: number }>()
  private sweepAt = 0

  constructor(private readonly clock: () => number = Date.now) {}

  /** Applies `grantOf` to the key's count; returns the grant and the count after it. */
  answer(req: LeaseRequest): Grant {
    const now = this.clock()
    this.sweep(now)
    const entry = this.counts.get(req.key)
    const live = entry !== undefined && entry.expires > now ? entry : undefined
    const used = live?.used ?? 0
    const grant = grantOf(used, req.limit, req.demand, req.want, leaseReserve, leaseShare)
    if (grant <= 0) return { grant: 0, used }
    // Like SET EX then INCRBY: the expiry is set by the window's first grant and kept after.
    if (live === undefined) this.counts.set(req.key, { used: grant, expires: now + req.ttl * 1000 })
    else live.used += grant
    return { grant, used: used + grant }
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

/** What a worker needs of its IPC channel to the primary (see `IpcChannel`). */
export type LeaseChannel = IpcChannel

/** Takes from the primary's ledger over IPC. */
class ChannelLeaseCounter implements LeaseCounter {
  constructor(readonly requests: IpcRequests) {}

  get ready() {
    return this.requests.ready
  }

  async take(key: string, ttl: number, limit: number, demand: number, want: number) {
    const reply = await this.requests.ask('lease', { key, ttl, limit, demand, want })
    if (!isLeaseReply(reply)) throw new Error('the primary answered a lease without a grant')
    return { grant: reply.grant, used: reply.used }
  }

  close() {
    return this.requests.close()
  }
}

/**
 * A worker's rate limiter: leases from the primary's `LeaseLedger` exactly as instances lease
 * from Redis (see `LeasingRateLimiter`), so the workers of one machine share one count. Without
 * a channel, or when a take gets no answer in time, it counts in process, and shares again when
 * the primary answers.
 */
export class WorkerRateLimiter extends LeasingRateLimiter {
  constructor(channel: LeaseChannel, log: Logger) {
    const counter = new ChannelLeaseCounter(new IpcRequests(channel))
    super(counter, log, { keyPrefix: '', peer: 'the primary', each: 'worker' })
    counter.requests.answered = () => this.regained()
  }
}
