import { type IpcChannel, IpcRequests } from './ipc.js'

export type { IpcChannel }

/** A key to count an attempt on, and how many it allows within its window. */
export interface AttemptKey {
  key: string
  limit: number
}

interface Counter {
  count: number
  until: number
}

/** Past this many keys, the expired ones are swept before another is added. */
const sweepAt = 100_000

/**
 * Attempts per key in windows that open with a key's first attempt (the sign-in throttle's
 * counts): in one process, and in a primary for all its workers. Nothing is awaited between
 * the checks and the counts, so a reserve is atomic in its process.
 */
export class AttemptLedger {
  private readonly counters = new Map<string, Counter>()

  /**
   * Takes one attempt on every key: when one is past its limit, none is taken and the answer is
   * the milliseconds until it opens again; otherwise 0.
   */
  reserve(keys: readonly AttemptKey[], windowMs: number, now: number): number {
    const counters = keys.map(({ key }) => {
      let counter = this.counters.get(key)
      if (counter === undefined || counter.until <= now) {
        if (this.counters.size >= sweepAt) this.sweep(now)
        counter = { count: 0, until: now + windowMs }
        this.counters.set(key, counter)
      }
      return counter
    })
    let wait = 0
    keys.forEach(({ limit }, i) => {
      const counter = counters[i] as Counter
      if (counter.count + 1 > limit) wait = Math.max(wait, counter.until - now)
    })
    if (wait === 0) for (const counter of counters) counter.count++
    return wait
  }

  /** Gives back an attempt `reserve` took on each key that still counts one. */
  release(keys: readonly string[], now: number): void {
    for (const key of keys) {
      const counter = this.counters.get(key)
      if (counter !== undefined && counter.until > now && counter.count > 0) counter.count--
    }
  }

  clear(key: string): void {
    this.counters.delete(key)
  }

  private sweep(now: number) {
    for (const [key, counter] of this.counters) if (counter.until <= now) this.counters.delete(key)
  }
}

/** A worker's attempts, sent to its primary (`tessera: 'attempts'`); `id` asks for an answer. */
export type AttemptRequest =
  | { tessera: 'attempts'; id: number; op: 'reserve'; keys: AttemptKey[]; windowMs: number }
  | { tessera: 'attempts'; op: 'release'; keys: string[] }
  | { tessera: 'attempts'; op: 'clear'; key: string }

const isKey = (k: unknown) =>
  typeof k === 'object' &&
  k !== null &&
  typeof (k as AttemptKey).key === 'string' &&
  typeof (k as AttemptKey).limit === 'number'

/** Whether an IPC message is a worker's attempt request (the channel carries others too). */
export function isAttemptRequest(m: unknown): m is AttemptRequest {
  if (typeof m !== 'object' || m === null) return false
  const r = m as Record<string, unknown>
  if (r.tessera !== 'attempts') return false
  if (r.op === 'reserve') {
    return (
      typeof r.id === 'number' &&
      typeof r.windowMs === 'number' &&
      Array.isArray(r.keys) &&
      r.keys.every(isKey)
    )
  }
  if (r.op === 'release') return Array.isArray(r.keys) && r.keys.every((k) => typeof k === 'string')
  return r.op === 'clear' && typeof r.key === 'string'
}

/**
 * The primary's side: applies a worker's request to `ledger` in one synchronous step, as Redis
 * runs the throttle's script; the answer to send back, for a reserve.
 */
export function answerAttempts(ledger: AttemptLedger, request: AttemptRequest, now: number) {
  if (request.op === 'release') ledger.release(request.keys, now)
  else if (request.op === 'clear') ledger.clear(request.key)
  else {
    const waitMs = ledger.reserve(request.keys, request.windowMs, now)
    return { tessera: 'attempts' as const, id: request.id, waitMs }
  }
  return undefined
}

/**
 * A worker's attempts, counted by its primary for every worker of the machine. Each answer is
 * undefined (or false) when the primary cannot be asked or does not answer in time: the caller
 * then counts in its own process.
 */
export class PrimaryAttempts {
  private readonly requests: IpcRequests

  constructor(channel: IpcChannel) {
    this.requests = new IpcRequests(channel)
  }

  async reserve(keys: AttemptKey[], windowMs: number): Promise<number | undefined> {
    try {
      const reply = await this.requests.ask('attempts', { op: 'reserve', keys, windowMs })
      return typeof reply.waitMs === 'number' ? reply.waitMs : undefined
    } catch {
      return undefined
    }
  }

  release(keys: string[]): boolean {
    return this.requests.tell({ tessera: 'attempts', op: 'release', keys } satisfies AttemptRequest)
  }

  clear(key: string): boolean {
    return this.requests.tell({ tessera: 'attempts', op: 'clear', key } satisfies AttemptRequest)
  }

  close(): Promise<void> {
    return this.requests.close()
  }
}
