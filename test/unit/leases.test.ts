import { pino } from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  isLeaseRequest,
  type LeaseChannel,
  LeaseLedger,
  type LeaseRequest,
  WorkerRateLimiter,
} from '../../src/ratelimit/cluster.js'
import { grantOf, leaseMax, leaseReserve, leaseShare } from '../../src/ratelimit/leases.js'
import { windowOf } from '../../src/ratelimit/limiter.js'

type Listener = (message: unknown) => void

/** One end of an in-process channel: messages arrive a turn later, copied, as over real IPC. */
class FakeChannel implements LeaseChannel {
  connected = true
  peer: FakeChannel | undefined
  readonly listeners = new Set<Listener>()

  send(message: unknown) {
    const peer = this.peer as FakeChannel
    const copy = structuredClone(message)
    setImmediate(() => {
      if (!this.connected || !peer.connected) return
      for (const l of peer.listeners) l(copy)
    })
    return true
  }
  on(_event: 'message', listener: Listener) {
    this.listeners.add(listener)
    return this
  }
  off(_event: 'message', listener: Listener) {
    this.listeners.delete(listener)
    return this
  }
}

function channelPair() {
  const worker = new FakeChannel()
  const primary = new FakeChannel()
  worker.peer = primary
  primary.peer = worker
  return { worker, primary }
}

/** The primary's side, as src/cluster/primary.ts wires it to each worker. */
function serve(ledger: LeaseLedger, primary: FakeChannel) {
  primary.on('message', (m) => {
    if (isLeaseRequest(m)) primary.send({ tessera: 'lease', id: m.id, ...ledger.answer(m) })
  })
}

const now = 1_700_000_010_000
const minute = { limit: 0, duration: 60_000 }
const windowKey = (key: string) => `rl:60000:${windowOf(now, 60_000)}:${key}`
/** The window's end, epoch ms. */
const reset = (windowOf(now, 60_000) + 1) * 60_000
const lines: string[] = []
const log = pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l).msg) })
const limiters: WorkerRateLimiter[] = []

/** A worker's limiter over its own channel to the primary, which answers from `ledger`. */
function worker(ledger: LeaseLedger | undefined, limit: number) {
  const { worker, primary } = channelPair()
  if (ledger) serve(ledger, primary)
  const limiter = new WorkerRateLimiter(worker, log)
  limiters.push(limiter)
  const rule = { ...minute, limit }
  // The rule of the test's limit on each hit, as the checkpoint gives it.
  const l = Object.assign(limiter, {
    hit: (key: string, nowMs: number) =>
      WorkerRateLimiter.prototype.hit.call(limiter, key, nowMs, rule),
  })
  return { l, channel: worker, primary }
}

afterEach(async () => {
  vi.useRealTimers()
  for (const l of limiters.splice(0)) await l.close()
  lines.length = 0
})

describe('grantOf (the arithmetic of the Redis Lua script)', () => {
  it.each([
    // used, limit, demand, want, grant
    [0, 5, 3, 0, 3], // a quiet key: its turn's requests alone
    [3, 5, 3, 0, 2], // what the window has left, no more
    [5, 5, 1, 0, 0], // the window spent
    [7, 5, 1, 0, 0], // over, as a count granted before a lower limit
    [0, 1000, 20, 10, 30], // a busy key: its demand and the lease it wants
    [30, 1000, 0, 13, 13], // a refill
    [0, 30, 10, 100, 12], // a lease of a quarter of what is left above the reserve
    [0, 14, 1, 100, 1], // at reserve + share, never a lease
    [0, 15, 1, 100, 2], // one above, a lease of 1
    [990, 1000, 4, 100, 4], // the last 10 of a window are granted one by one
    [0, 100_000, 8, leaseMax, 8 + leaseMax], // no more than `want`
    [0, 1000, 0, 0, 0],
  ])('used %i of %i, demand %i, want %i: grants %i', (used, limit, demand, want, grant) => {
    expect(grantOf(used, limit, demand, want, leaseReserve, leaseShare)).toBe(grant)
  })
})

describe('the lease ledger (the primary)', () => {
  const request = (key: string, limit: number, demand: number, want = 0): LeaseRequest => ({
    tessera: 'lease',
    id: 1,
    key,
    ttl: 61,
    limit,
    demand,
    want,
  })

  it('counts each key on its own and never grants more than the limit', () => {
    const ledger = new LeaseLedger(() => 0)
    expect([3, 3, 1].map((demand) => ledger.answer(request('a', 5, demand)).grant)).toEqual([
      3, 2, 0,
    ])
    expect(ledger.answer(request('b', 1000, 20, 10))).toEqual({ grant: 30, used: 30 })
    expect(ledger.answer(request('b', 1000, 0, 13))).toEqual({ grant: 13, used: 43 })
    expect([ledger.used('a'), ledger.used('b'), ledger.used('c')]).toEqual([5, 43, 0])
  })

  it('forgets a key ttl seconds after its first grant, as Redis expires it', () => {
    let t = 0
    const ledger = new LeaseLedger(() => t)
    expect(ledger.answer(request('a', 5, 3)).grant).toBe(3)
    t = 30_000
    expect(ledger.answer(request('a', 5, 1)).grant).toBe(1) // a later grant keeps the first expiry
    t = 60_999
    expect(ledger.used('a')).toBe(4)
    t = 61_000
    expect(ledger.used('a')).toBe(0)
    expect(ledger.answer(request('b', 5, 1)).grant).toBe(1)
    expect(ledger.size).toBe(1) // the past key swept
    expect(ledger.answer(request('a', 5, 5)).grant).toBe(5)
  })

  it('tells lease requests from the other messages on the channel', () => {
    const valid = request('a', 5, 1)
    expect(isLeaseRequest(valid)).toBe(true)
    expect(isLeaseRequest({ ...valid, want: '1' })).toBe(false)
    expect(isLeaseRequest({ tessera: 'lease', id: 1, grant: 3, used: 3 })).toBe(false)
    expect(isLeaseRequest({ type: 'prom-client:getMetricsReq', requestId: 1 })).toBe(false)
    expect(isLeaseRequest(null)).toBe(false)
  })
})

describe('workers leasing from the primary', () => {
  it('accepts `process` as the channel', () => {
    const channel: LeaseChannel = process
    expect(channel).toBe(process)
  })

  it('limit 5, 3 + 3 requests on two workers in one turn: exactly 5 pass, 1 is refused', async () => {
    const ledger = new LeaseLedger()
    const [a, b] = [worker(ledger, 5).l, worker(ledger, 5).l]
    const results = await Promise.all([a, a, a, b, b, b].map((l) => l.hit('account', now)))
    expect(results.filter((r) => r.allowed)).toHaveLength(5)
    expect(results.filter((r) => !r.allowed)).toHaveLength(1)
    expect(new Set(results.map((r) => r.reset))).toEqual(new Set([reset]))
    expect(ledger.used(windowKey('account'))).toBe(5)
    expect([a.calls, b.calls, a.unspent('account'), b.unspent('account')]).toEqual([1, 1, 0, 0])
    expect([a.shared, b.shared]).toEqual([true, true])
  })

  it('takes a lease for a busy key: its later requests are answered without a round trip', async () => {
    const ledger = new LeaseLedger()
    const { l } = worker(ledger, 1000)
    // 20 requests in one turn: one round trip grants them and a lease of half their rate.
    const first = await Promise.all(Array.from({ length: 20 }, () => l.hit('busy', now)))
    expect(first.every((r) => r.allowed)).toBe(true)
    expect([l.unspent('busy'), l.calls]).toEqual([10, 1])
    const next = Array.from({ length: 5 }, () => l.hit('busy', now))
    expect(next.every((r) => !(r instanceof Promise) && r.allowed)).toBe(true)
    expect([l.unspent('busy'), l.calls]).toEqual([5, 2]) // at half the lease, one refill
    await l.idle()
    // The refill is half the rate seen in the bucket (25 requests): 13 more.
    expect(l.unspent('busy')).toBe(18)
    expect(ledger.used(windowKey('busy'))).toBe(25 + 18)
  })

  it('without a channel, counts in process at once and says so once', async () => {
    const { l, channel } = worker(new LeaseLedger(), 2)
    channel.connected = false
    const results = [1, 2, 3].map(() => l.hit('gone', now))
    expect(results).toEqual([
      { allowed: true, limit: 2, remaining: 1, reset },
      { allowed: true, limit: 2, remaining: 0, reset },
      { allowed: false, limit: 2, remaining: 0, reset },
    ])
    expect([l.shared, l.calls, l.errors]).toEqual([false, 0, 0])
    expect(lines).toEqual([
      'The primary is unreachable: counting rate limits per worker until it returns',
    ])
  })

  it('a channel closed before the turn ends fails the take: the waiting are counted in process', async () => {
    const { l, channel } = worker(new LeaseLedger(), 5)
    const waiting = l.hit('closing', now)
    channel.connected = false
    expect(await waiting).toEqual({ allowed: true, limit: 5, remaining: 4, reset })
    expect([l.shared, l.calls, l.errors]).toEqual([false, 1, 1])
  })

  it('a take unanswered for 2 s is given up; a later answer shares again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const ledger = new LeaseLedger()
    const { l, primary } = worker(undefined, 5)
    let settled: unknown
    void (l.hit('slow', now) as Promise<unknown>).then((r) => {
      settled = r
    })
    await new Promise((resolve) => setImmediate(resolve)) // the turn's round trip is sent
    await vi.advanceTimersByTimeAsync(1999)
    expect([settled, l.shared]).toEqual([undefined, true])
    await vi.advanceTimersByTimeAsync(1)
    // Given up a turn later (once a reply already in the pipe would have been read).
    await new Promise((resolve) => setImmediate(resolve))
    expect(settled).toEqual({ allowed: true, limit: 5, remaining: 4, reset })
    expect([l.shared, l.errors]).toEqual([false, 1])

    serve(ledger, primary)
    expect(await l.hit('slow', now)).toMatchObject({ allowed: true })
    expect([l.shared, ledger.used(windowKey('slow'))]).toEqual([true, 1])
    expect(lines).toEqual([
      'The primary is unreachable: counting rate limits per worker until it returns',
      'The primary is reachable again: rate limits are shared once more',
    ])
  })

  it('ignores the other messages on the channel and replies to no request of its own', async () => {
    const ledger = new LeaseLedger()
    const { l, primary } = worker(ledger, 5)
    primary.send({ type: 'prom-client:getMetricsReq', requestId: 1 })
    primary.send({ tessera: 'lease', id: 99, grant: 5, used: 5 })
    await new Promise((resolve) => setImmediate(resolve))
    expect(await l.hit('other', now)).toMatchObject({ allowed: true })
    expect([l.unspent('other'), ledger.used(windowKey('other')), l.shared]).toEqual([0, 1, true])
  })
})
