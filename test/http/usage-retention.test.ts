import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { Meter } from '../../src/usage/meter.js'
import { outcomeIndex as o } from '../../src/usage/outcomes.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { usageRows } from './usage-helpers.js'

/** Rollups (minutes into hours and days, at the flush) and retention, on a fake clock. */

let h: Harness
afterEach(() => h.close())

const minute = 60_000
const day = 86_400_000

describe('usage rollups', () => {
  it("adds every instance's counts into the same minute, hour and day rows", async () => {
    h = await harness()
    const a = h.alice.defaultToken.id
    // A second instance on the same database.
    const other = new Meter(h.ctx.db, () => h.clock.now, h.ctx.config.usage.retentionDays)
    h.clock.now = T0 + 10 * minute
    h.ctx.usage.count('alice', a, o.valid, 2)
    other.count('alice', a, o.valid, 3)
    other.count('alice', a, o.revoked)
    h.clock.now = T0 + 70 * minute // 13:10, the next hour
    h.ctx.usage.count('alice', a, o.valid)
    await Promise.all([h.ctx.usage.flush(), other.flush()])
    h.clock.now = T0 + 71 * minute
    other.count('alice', a, o.valid, 10)
    await other.flush()
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      [`alice/${a} 2026-11-22T12:10`]: { valid: 5, revoked: 1 },
      [`alice/${a} 2026-11-22T13:10`]: { valid: 1 },
      [`alice/${a} 2026-11-22T13:11`]: { valid: 10 },
    })
    expect(await usageRows(h.ctx.db, 'usage_hours')).toEqual({
      [`alice/${a} 2026-11-22T12`]: { valid: 5, revoked: 1 },
      [`alice/${a} 2026-11-22T13`]: { valid: 11 },
    })
    expect(await usageRows(h.ctx.db, 'usage_days')).toEqual({
      [`alice/${a} 2026-11-22`]: { valid: 16, revoked: 1 },
    })
    expect([...(await h.ctx.usage.lastUsed([a]))]).toEqual([[a, '2026-11-22T13:11:00.000Z']])
  })

  it('writes a flush whole or not at all, and keeps the counts of a failed one', async () => {
    h = await harness()
    const a = h.alice.defaultToken.id
    h.ctx.usage.count('alice', a, o.valid, 2)
    h.clock.now = T0 + minute
    h.ctx.usage.count('alice', a, o.valid, 1)
    // The last table of the transaction is away: the minutes and hours it wrote roll back.
    await sql`alter table usage_days rename to usage_days_away`.execute(h.ctx.db)
    try {
      await h.ctx.usage.flush()
    } finally {
      await sql`alter table usage_days_away rename to usage_days`.execute(h.ctx.db)
    }
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({})
    expect(await h.ctx.usage.lastUsed([a])).toEqual(new Map())
    h.ctx.usage.count('alice', a, o.invalid, 1)
    await h.ctx.usage.flush()
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      [`alice/${a} 2026-11-22T12:00`]: { valid: 2 },
      [`alice/${a} 2026-11-22T12:01`]: { valid: 1, invalid: 1 },
    })
    expect(await usageRows(h.ctx.db, 'usage_days')).toEqual({
      [`alice/${a} 2026-11-22`]: { valid: 3, invalid: 1 },
    })
  })
})

describe('usage retention', () => {
  it('prunes each resolution on its own retention and reports after 7 days, by time only', async () => {
    h = await harness({
      USAGE_MINUTE_RETENTION_DAYS: '2',
      USAGE_HOUR_RETENTION_DAYS: '5',
      USAGE_DAY_RETENTION_DAYS: '10',
    })
    const a = h.alice.defaultToken.id
    const gone = await h.token('alice', ['styles:read'])
    h.ctx.usage.count('alice', a, o.valid)
    h.ctx.usage.count('alice', gone.id, o.valid)
    h.ctx.usage.count('alice', '', o.expired)
    h.ctx.usage.count('', '', o.malformed)
    await h.ctx.usage.flush()
    await h.ctx.usage.record([], { reporter: 'edge', batch: 'b1' })
    await h.ctx.tokens.remove(h.alice, gone.id, { type: 'cli' })
    const tables = async () => ({
      minutes: Object.keys(await usageRows(h.ctx.db, 'usage_minutes')),
      hours: Object.keys(await usageRows(h.ctx.db, 'usage_hours')),
      days: Object.keys(await usageRows(h.ctx.db, 'usage_days')),
      reports: (await h.ctx.db.selectFrom('usage_reports').select('batch').execute()).length,
    })
    // A deleted token's rows stay until their retention (its last use goes at once).
    const kept = (at: string) =>
      [`/ ${at}`, `alice/ ${at}`, `alice/${a} ${at}`, `alice/${gone.id} ${at}`].sort()
    h.clock.now = T0 + 2 * day - 1 // the minute is kept 2 days
    await h.ctx.prune()
    expect(await h.ctx.usage.lastUsed([gone.id])).toEqual(new Map())
    expect(await tables()).toEqual({
      minutes: kept('2026-11-22T12:00'),
      hours: kept('2026-11-22T12'),
      days: kept('2026-11-22'),
      reports: 1,
    })
    h.clock.now = T0 + 2 * day + minute
    await h.ctx.prune()
    expect((await tables()).minutes).toEqual([])
    // A bucket goes once it ended before the retention: the hour 12 at 13:00 five days on.
    h.clock.now = T0 + 5 * day + 3_600_000 - 1
    await h.ctx.prune()
    expect((await tables()).hours).toEqual(kept('2026-11-22T12'))
    h.clock.now = T0 + 5 * day + 3_600_000
    await h.ctx.prune()
    expect(await tables()).toEqual({ minutes: [], hours: [], days: kept('2026-11-22'), reports: 1 })
    h.clock.now = T0 + 7 * day + 1
    await h.ctx.prune()
    expect((await tables()).reports).toBe(0)
    // The day of 2026-11-22 ended 2026-11-23T00:00; kept 10 days after.
    h.clock.now = Date.parse('2026-12-03T00:00:00Z') - 1
    await h.ctx.prune()
    expect((await tables()).days).toEqual(kept('2026-11-22'))
    h.clock.now = Date.parse('2026-12-03T00:00:00Z')
    await h.ctx.prune()
    expect((await tables()).days).toEqual([])
  })
})
