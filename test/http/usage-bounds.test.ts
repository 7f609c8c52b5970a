import { pino } from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { WorkersUsage } from '../../src/cluster/usage.js'
import { isUsageHandover } from '../../src/usage/handover.js'
import { Meter } from '../../src/usage/meter.js'
import { outcomeIndex as o } from '../../src/usage/outcomes.js'
import { meterOf } from '../../src/usage/writes.js'
import type { Valid } from '../../src/verification/checkpoint.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { usageRows } from './usage-helpers.js'

/** What bounds the usage: retention only, an account's creation, a batch's sums, `pending`. */

let h: Harness
afterEach(() => h.close())

const minute = 60_000
const hour = 60 * minute
const usage = (q: string) => admin(h.app, 'GET', `/accounts/alice/usage?${q}`)

describe('usage bounds', () => {
  it("keeps a deleted token's counts, revoked ones included, until their retention", async () => {
    h = await harness(adminEnv)
    const sk = await h.token('alice', all)
    expect((await call(h.app, 'GET', '/tokens/v2', sk.token)).status).toBe(200)
    await h.ctx.tokens.remove(h.alice, sk.id, cliActor)
    expect((await call(h.app, 'GET', '/tokens/v2', sk.token)).body.code).toBe('TokenRevoked')
    h.clock.now = T0 + minute
    await h.ctx.usage.flush()
    await h.ctx.prune()
    const counted = { [`alice/${sk.id} 2026-11-22`]: { valid: 1, revoked: 1 } }
    expect(await usageRows(h.ctx.db, 'usage_days')).toEqual(counted)
    expect(Object.keys(await usageRows(h.ctx.db, 'usage_minutes'))).toEqual([
      `alice/${sk.id} 2026-11-22T12:00`,
    ])
    const res = await usage('from=2026-11-22&to=2026-11-23&resolution=day')
    expect(res.body.totals).toEqual({ valid: 1, revoked: 1 })
  })

  it("shows a new account of a reused name none of the former one's counts", async () => {
    h = await harness(adminEnv)
    h.ctx.usage.count('alice', '', o.valid, 7)
    h.ctx.usage.count('alice', '', o.expired, 3)
    h.clock.now = T0 + minute
    await h.ctx.usage.flush()
    await h.ctx.accounts.remove('alice', cliActor)
    h.clock.now = T0 + 2 * hour + 30 * minute // 14:30
    await h.ctx.prune()
    await h.ctx.accounts.create('alice', undefined, [], cliActor)
    const tk = await h.token('alice', all)
    // A verifier's counts of the new token: 14:29 is before the account, 14:30 after.
    const counts = [
      { minute: '2026-11-22T14:29:00Z', account: 'alice', token: tk.id, outcomes: { valid: 4 } },
      { minute: '2026-11-22T14:30:00Z', account: 'alice', token: tk.id, outcomes: { valid: 2 } },
    ]
    const reported = await admin(h.app, 'POST', '/usage/reports', {
      reporter: 'e',
      batch: 'b',
      counts,
    })
    expect(reported.body).toEqual({ counted: true })
    h.ctx.usage.count('alice', '', o.revoked, 1)
    h.clock.now = T0 + 3 * hour
    await h.ctx.usage.flush()
    const day = 'from=2026-11-22&to=2026-11-23'
    // The creation's day is read from its hours from the creation's on (14:29 is in it).
    const days = await usage(`${day}&resolution=day`)
    expect([days.body.series, days.body.totals]).toEqual([
      [{ start: '2026-11-22T00:00:00.000Z', outcomes: { valid: 6, revoked: 1 } }],
      { valid: 6, revoked: 1 },
    ])
    // The creation's hour from its minutes from the creation's on (docs/metering.md).
    const hours = await usage(`${day}&resolution=hour`)
    expect(hours.body.series).toEqual([
      { start: '2026-11-22T14:00:00.000Z', outcomes: { valid: 2, revoked: 1 } },
    ])
    const minutes = await usage(`${day}&resolution=minute`)
    expect(minutes.body.series).toEqual([
      { start: '2026-11-22T14:30:00.000Z', outcomes: { valid: 2, revoked: 1 } },
    ])
    const tokens = await admin(h.app, 'GET', `/accounts/alice/usage/tokens?${day}`)
    expect(tokens.body.tokens).toEqual([
      { token: tk.id, outcomes: { valid: 2 } },
      { token: '', outcomes: { revoked: 1 } },
    ])
    // Without the account's creation every stored count is there.
    const q = { from: T0 - hour, to: T0 + 12 * hour, resolution: 'day' } as const
    expect(await h.ctx.usage.totals('alice', q)).toEqual({ valid: 13, expired: 3, revoked: 1 })
    // A token's hours: the hour of the creation on (its 14:29 is in it).
    expect((await h.ctx.usage.activity(tk.id, 'alice')).hours).toEqual([
      { hour: '2026-11-22T14', count: 6 },
    ])
  })

  it('reads a range that ends in year 9999 up to a day ahead', async () => {
    h = await harness(adminEnv)
    h.ctx.usage.count('alice', '', o.valid, 5)
    h.clock.now = T0 + minute
    await h.ctx.usage.flush()
    const res = await usage('from=2026-11-01&to=9999-12-31T12:00:00Z&resolution=day')
    expect(res.status).toBe(200)
    expect([res.body.to, res.body.series, res.body.totals]).toEqual([
      '9999-12-31T12:00:00.000Z',
      [{ start: '2026-11-22T00:00:00.000Z', outcomes: { valid: 5 } }],
      { valid: 5 },
    ])
    const ahead = await usage('from=9999-12-30&to=9999-12-31&resolution=day')
    expect([ahead.status, ahead.body.series, ahead.body.totals]).toEqual([200, [], {}])
  })
})

describe('verifier batch bounds', () => {
  const report = (batch: string, counts: object[]) =>
    admin(h.app, 'POST', '/usage/reports', { reporter: 'e', batch, counts })
  const row = (m: string, valid: number) => ({
    minute: m,
    account: 'alice',
    token: '',
    outcomes: { valid },
  })

  it('refuses more than 10^9 of an outcome in a minute, and minutes past the days kept', async () => {
    h = await harness({ ...adminEnv, USAGE_DAY_RETENTION_DAYS: '10' })
    const bad: [string, object[]][] = [
      [
        '2 x 6 * 10^8 in one minute',
        [row('2026-11-22T12:00:00Z', 6e8), row('2026-11-22T12:00:30Z', 6e8)],
      ],
      ['10^9 + 1 in one row', [row('2026-11-22T12:00:00Z', 1e9 + 1)]],
      ['11 days ago', [row('2026-11-11T11:59:00Z', 1)]],
      ['1970', [row('1970-01-01T00:00:00Z', 1)]],
    ]
    for (const [what, counts] of bad) {
      const res = await report('b', counts)
      expect([what, res.status, res.body.message]).toEqual([what, 422, 'resources are invalid'])
    }
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({})
    const good = await report('b', [
      row('2026-11-22T12:00:00Z', 6e8),
      row('2026-11-22T12:00:30Z', 4e8),
      row('2026-11-22T12:01:00Z', 1e9),
      row('2026-11-12T12:00:00Z', 1),
    ])
    expect(good.body).toEqual({ counted: true })
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      'alice/ 2026-11-12T12:00': { valid: 1 },
      'alice/ 2026-11-22T12:00': { valid: 1e9 },
      'alice/ 2026-11-22T12:01': { valid: 1e9 },
    })
  })
})

describe('usage flushes', () => {
  it('writes window by window: a window that fails neither blocks the next nor is lost', async () => {
    h = await harness()
    const a = h.alice.defaultToken.id
    let errors = 0
    const meter = new Meter(
      h.ctx.db,
      () => h.clock.now,
      h.ctx.config.usage.retentionDays,
      () => {
        errors++
      },
    )
    meter.count('alice', a, o.valid, Number.NaN) // no column takes it
    h.clock.now = T0 + minute
    meter.count('alice', a, o.valid, 2)
    await meter.flush()
    expect([errors, await usageRows(h.ctx.db, 'usage_minutes')]).toEqual([
      1,
      { [`alice/${a} 2026-11-22T12:01`]: { valid: 2 } },
    ])
    // Kept, and dropped past `maxPending` (counted), the oldest first.
    meter.maxPending = { windows: 2, keys: 100 }
    const drops: [string, number][] = []
    meter.onDrop = (m, keys) => drops.push([new Date(m).toISOString(), keys])
    h.clock.now = T0 + 2 * minute
    meter.count('alice', a, o.valid, 1)
    meter.count('alice', '', o.valid, 1)
    h.clock.now = T0 + 3 * minute
    meter.count('alice', a, o.revoked, 1)
    h.clock.now = T0 + 4 * minute
    meter.count('alice', a, o.expired, 1)
    expect(drops).toEqual([['2026-11-22T12:00:00.000Z', 1]])
    await meter.flush()
    expect(drops).toEqual([
      ['2026-11-22T12:00:00.000Z', 1],
      ['2026-11-22T12:02:00.000Z', 2],
    ])
    expect([errors, meter.dropped]).toEqual([1, { windows: 2, keys: 3 }])
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      [`alice/${a} 2026-11-22T12:01`]: { valid: 2 },
      [`alice/${a} 2026-11-22T12:03`]: { revoked: 1 },
      [`alice/${a} 2026-11-22T12:04`]: { expired: 1 },
    })
  })

  it('schedules no flush after stop, even when stopped during a timed flush', async () => {
    h = await harness()
    const meter = new Meter(h.ctx.db, () => h.clock.now, h.ctx.config.usage.retentionDays)
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      meter.start()
      expect(meter.scheduled).toBe(true)
      meter.count('alice', '', o.valid, 1)
      vi.advanceTimersByTime(61_000) // the timed flush starts
      expect(meter.scheduled).toBe(false)
      await meter.stop()
      expect(meter.scheduled).toBe(false)
    } finally {
      vi.useRealTimers()
    }
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      'alice/ 2026-11-22T12:00': { valid: 1 },
    })
  })

  it("writes what a worker hands over in the primary; a killed worker's loss is estimated from its last hand-over", async () => {
    h = await harness()
    const a = h.alice.defaultToken.id
    const log = pino({ level: 'silent' })
    const primary = WorkersUsage.open(h.ctx.config, log, () => h.clock.now)
    // The worker's end of its IPC channel: messages arrive copied, as over real IPC.
    const channel = {
      connected: true,
      send(m: unknown) {
        if (isUsageHandover(m)) primary.received(0, structuredClone(m))
        return true
      },
      on: () => undefined,
    }
    const figures = h.ctx.metrics
    const config = h.ctx.config.usage
    const worker = meterOf(h.ctx.db, () => h.clock.now, config, { log, figures, primary: channel })
    expect(worker.flushEveryMs).toBe(1_000)
    worker.count('alice', a, o.valid, 20)
    await worker.flush()
    h.clock.now = T0 + 1_000
    worker.count('alice', a, o.valid, 10)
    await worker.flush()
    // Killed half a second after a hand-over of 10: about 5 counted since are gone with it.
    h.clock.now = T0 + 1_500
    primary.ended(0, false)
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({})
    await primary.close()
    expect(primary.figures.usageLosses.lost).toEqual({ dropped: 0, workerKilled: 5 })
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      [`alice/${a} 2026-11-22T12:00`]: { valid: 30 },
    })
    expect((await h.ctx.usage.lastUsed([a])).get(a)).toBe('2026-11-22T12:00:00.000Z')
    const text = await primary.registry.metrics()
    expect(text).toContain('tessera_usage_lost_total{cause="worker_killed"} 5')
  })

  it('rate limits a valid token at once, without a promise, and meters a 429', async () => {
    h = await harness({ RATE_LIMIT_PER_MINUTE: '1' })
    const sk = await h.token('alice', all)
    const valid = (await h.ctx.tokens.validate(sk.token)) as Valid
    const first = h.ctx.checkpoint.admit(valid)
    expect(first instanceof Promise).toBe(false)
    expect(first).toMatchObject({ allowed: true, result: { remaining: 0 } })
    expect(h.ctx.checkpoint.admit(valid)).toMatchObject({ allowed: false })
    h.clock.now = T0 + minute
    await h.ctx.usage.flush()
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      [`alice/${sk.id} 2026-11-22T12:00`]: { valid: 1, rate_limited: 1 },
    })
  })
})
