import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { SignInThrottle } from '../../src/dashboard/throttle.js'
import {
  AttemptLedger,
  answerAttempts,
  isAttemptRequest,
  PrimaryAttempts,
} from '../../src/ratelimit/attempts.js'
import type { IpcChannel, MessageListener } from '../../src/ratelimit/ipc.js'

// The sign-in throttle of workers, counted by their primary over a channel of this test's
// (the real IPC: test/e2e/workers.test.ts).

/** A worker's end of a channel to a primary answering from `ledger`, a turn later, copied. */
function channelTo(ledger: AttemptLedger): IpcChannel & { connected: boolean } {
  const listeners = new Set<MessageListener>()
  const channel = {
    connected: true,
    send(message: unknown) {
      const copy = structuredClone(message)
      setImmediate(() => {
        if (!channel.connected || !isAttemptRequest(copy)) return
        const answer = answerAttempts(ledger, copy, Date.now())
        if (answer !== undefined) for (const l of listeners) l(structuredClone(answer))
      })
      return true
    },
    on(_event: 'message', listener: MessageListener) {
      listeners.add(listener)
    },
  }
  return channel
}

const log = pino({ level: 'silent' })
const user = { kind: 'user' as const, value: 'alice' }

describe('the sign-in throttle of workers', () => {
  it('counts one limit for all workers in their primary: of 10 failures at once, 5 are taken', async () => {
    const ledger = new AttemptLedger()
    const workers = [0, 1].map(
      () => new SignInThrottle(undefined, log, Date.now, new PrimaryAttempts(channelTo(ledger))),
    )
    const waits = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (workers[i % 2] as SignInThrottle).reserve([user])),
    )
    expect(waits.filter((w) => w === 0)).toHaveLength(5)
    expect(waits.filter((w) => w > 0 && w <= 900)).toHaveLength(5)
    // A success gives its attempt back, for every worker.
    await (workers[0] as SignInThrottle).release([user])
    await new Promise((resolve) => setImmediate(resolve))
    expect(await (workers[1] as SignInThrottle).reserve([user])).toBe(0)
    expect(await (workers[0] as SignInThrottle).reserve([user])).toBeGreaterThan(0)
  })

  it('counts in its own process while the primary cannot be asked', async () => {
    const ledger = new AttemptLedger()
    const channel = channelTo(ledger)
    channel.connected = false
    const throttle = new SignInThrottle(undefined, log, Date.now, new PrimaryAttempts(channel))
    const waits = []
    for (let i = 0; i < 6; i++) waits.push(await throttle.reserve([user]))
    expect(waits).toEqual([0, 0, 0, 0, 0, 900])
    await throttle.release([user])
    expect(await throttle.reserve([user])).toBe(0)
    expect(ledger.reserve([{ key: 'user:alice', limit: 5 }], 1000, Date.now())).toBe(0)
  })
})
