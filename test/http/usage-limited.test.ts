import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { WorkersUsage } from '../../src/cluster/usage.js'
import type { Db } from '../../src/db/database.js'
import { isUsageHandover } from '../../src/usage/handover.js'
import { meterOf } from '../../src/usage/writes.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/** The usage's split of rate_limited by the name of the limit that refused (issue 44). */

let h: Harness
afterEach(() => h.close())

const second = 1_000
const minute = 60_000
const hour = 60 * minute

type LimitedTable = 'usage_limited_minutes' | 'usage_limited_hours' | 'usage_limited_days'

/** A split table's rows as `account/token at name: n`, sorted. */
async function limitedRows(db: Db, table: LimitedTable): Promise<Record<string, number>> {
  const rows = await db.selectFrom(table).selectAll().execute()
  const out = rows.map(
    (r) => [`${r.account}/${r.token_id} ${r.at} ${r.name}`, Number(r.count)] as const,
  )
  return Object.fromEntries(out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

const q = (params: Record<string, string>) => new URLSearchParams(params).toString()
const day = { from: '2026-11-22T00:00:00Z', to: '2026-11-23T00:00:00Z' }

/**
 * `requests` (RATE_LIMIT_PER_MINUTE 3) and alice's own `burst` (1 a second). sk1 at 12:00:00
 * passes, then `burst` refuses it; sk2 passes at :01 and :02, then `requests` refuses it twice
 * at :03 (its `burst` given back each time). At 13:00:00, sk1 twice: `burst` refuses the second.
 */
async function refusedByTwoLimits() {
  const limits = [{ name: 'burst', limit: 1, duration: 1_000 }]
  const set = await admin(h.app, 'PUT', '/accounts/alice/ratelimits', { limits })
  expect(set.status).toBe(200)
  const sk1 = await h.token('alice', all)
  const sk2 = await h.token('alice', all)
  const at = async (ms: number, token: string) => {
    h.clock.now = ms
    return (await call(h.app, 'GET', '/tokens/v2', token)).status
  }
  const statuses = [
    await at(T0, sk1.token),
    await at(T0, sk1.token),
    await at(T0 + second, sk2.token),
    await at(T0 + 2 * second, sk2.token),
    await at(T0 + 3 * second, sk2.token),
    await at(T0 + 3 * second, sk2.token),
    await at(T0 + hour, sk1.token),
    await at(T0 + hour, sk1.token),
  ]
  expect(statuses).toEqual([200, 429, 200, 200, 429, 429, 200, 429])
  h.clock.now = T0 + hour + minute
  await h.ctx.usage.flush()
  return { sk1: sk1.id, sk2: sk2.id }
}

describe('rate_limited by limit name', () => {
  it('answers the split in the series, its totals and by token, exactly as refused', async () => {
    h = await harness({ ...adminEnv, RATE_LIMIT_PER_MINUTE: '3' })
    const { sk1, sk2 } = await refusedByTwoLimits()
    const series = await admin(h.app, 'GET', `/accounts/alice/usage?${q(day)}`)
    expect(series.status).toBe(200)
    expect(series.body).toEqual({
      resolution: 'hour',
      from: '2026-11-22T00:00:00.000Z',
      to: '2026-11-23T00:00:00.000Z',
      series: [
        {
          start: '2026-11-22T12:00:00.000Z',
          outcomes: { valid: 3, rate_limited: 3 },
          rate_limited_by: { burst: 1, requests: 2 },
        },
        {
          start: '2026-11-22T13:00:00.000Z',
          outcomes: { valid: 1, rate_limited: 1 },
          rate_limited_by: { burst: 1 },
        },
      ],
      totals: { valid: 4, rate_limited: 4 },
      rate_limited_by: { burst: 2, requests: 2 },
    })
    // One token's minutes: the page and the totals of that token alone.
    const minutes = await admin(
      h.app,
      'GET',
      `/accounts/alice/usage?${q({ ...day, resolution: 'minute', token: sk2 })}`,
    )
    expect(minutes.body).toMatchObject({
      series: [
        {
          start: '2026-11-22T12:00:00.000Z',
          outcomes: { valid: 2, rate_limited: 2 },
          rate_limited_by: { requests: 2 },
        },
      ],
      totals: { valid: 2, rate_limited: 2 },
      rate_limited_by: { requests: 2 },
    })
    const tokens = await admin(h.app, 'GET', `/accounts/alice/usage/tokens?${q(day)}`)
    expect(tokens.body).toEqual({
      tokens: [
        { token: sk1, outcomes: { valid: 2, rate_limited: 2 }, rate_limited_by: { burst: 2 } },
        {
          token: sk2,
          outcomes: { valid: 2, rate_limited: 2 },
          rate_limited_by: { requests: 2 },
        },
      ].sort((a, b) => (a.token < b.token ? -1 : 1)),
    })
    // Stored beside the counts, at every resolution.
    expect(await limitedRows(h.ctx.db, 'usage_limited_days')).toEqual({
      [`alice/${sk1} 2026-11-22 burst`]: 2,
      [`alice/${sk2} 2026-11-22 requests`]: 2,
    })
    expect(await limitedRows(h.ctx.db, 'usage_limited_minutes')).toEqual({
      [`alice/${sk1} 2026-11-22T12:00 burst`]: 1,
      [`alice/${sk1} 2026-11-22T13:00 burst`]: 1,
      [`alice/${sk2} 2026-11-22T12:00 requests`]: 2,
    })
  })

  it('leaves the split out where nothing was refused by a limit', async () => {
    h = await harness(adminEnv)
    const sk = await h.token('alice', all)
    expect((await call(h.app, 'GET', '/tokens/v2', sk.token)).status).toBe(200)
    h.clock.now = T0 + minute
    await h.ctx.usage.flush()
    const series = await admin(h.app, 'GET', `/accounts/alice/usage?${q(day)}`)
    expect(series.body).toEqual({
      resolution: 'hour',
      from: '2026-11-22T00:00:00.000Z',
      to: '2026-11-23T00:00:00.000Z',
      series: [{ start: '2026-11-22T12:00:00.000Z', outcomes: { valid: 1 } }],
      totals: { valid: 1 },
    })
    const tokens = await admin(h.app, 'GET', `/accounts/alice/usage/tokens?${q(day)}`)
    expect(tokens.body).toEqual({ tokens: [{ token: sk.id, outcomes: { valid: 1 } }] })
  })

  it('prunes the split with the counts, by retention', async () => {
    h = await harness(adminEnv)
    h.clock.now = T0 - 40 * 24 * hour
    h.ctx.usage.countLimitedAs('alice', '', 'burst', 2)
    h.clock.now = T0
    h.ctx.usage.countLimitedAs('alice', '', 'burst', 1)
    h.clock.now = T0 + minute
    await h.ctx.usage.flush()
    await h.ctx.usage.prune()
    expect(await limitedRows(h.ctx.db, 'usage_limited_minutes')).toEqual({
      'alice/ 2026-11-22T12:00 burst': 1,
    })
    expect(Object.keys(await limitedRows(h.ctx.db, 'usage_limited_days'))).toEqual([
      'alice/ 2026-10-13 burst',
      'alice/ 2026-11-22 burst',
    ])
  })
})

describe('a verifier report with rate_limited_by', () => {
  const row = (extra: object = {}) => ({
    minute: '2026-11-22T12:01:00Z',
    account: 'alice',
    token: h.alice.defaultToken.id,
    outcomes: { valid: 2, rate_limited: 5 },
    ...extra,
  })
  const report = (batch: string, counts: object[]) =>
    admin(h.app, 'POST', '/usage/reports', { reporter: 'edge-1', batch, counts })

  it('adds the split with the counts, once, where the row is counted', async () => {
    h = await harness(adminEnv)
    const a = h.alice.defaultToken.id
    const gone = h.bob.defaultToken.id
    const counts = [
      row({ rate_limited_by: { burst: 3, requests: 1 } }),
      row({ minute: '2026-11-22T12:01:30Z', rate_limited_by: { burst: 1, other: 0 } }),
      // Not alice's id: its revoked count is nobody's, its rate_limited and split stay hers.
      {
        minute: '2026-11-22T12:02:00Z',
        account: 'alice',
        token: gone,
        outcomes: { revoked: 4, rate_limited: 2 },
        rate_limited_by: { burst: 2 },
      },
    ]
    expect((await report('b-1', counts)).body).toEqual({ counted: true })
    expect((await report('b-1', counts)).body).toEqual({ counted: false })
    expect(await limitedRows(h.ctx.db, 'usage_limited_minutes')).toEqual({
      [`alice/${a} 2026-11-22T12:01 burst`]: 4,
      [`alice/${a} 2026-11-22T12:01 requests`]: 1,
      [`alice/${gone} 2026-11-22T12:02 burst`]: 2,
    })
    const usage = await admin(h.app, 'GET', `/accounts/alice/usage?${q(day)}`)
    expect(usage.body).toMatchObject({
      totals: { valid: 4, rate_limited: 12 },
      rate_limited_by: { burst: 6, requests: 1 },
    })
  })

  it('refuses a split past its rate_limited, or of bad names or counts, with 422', async () => {
    h = await harness(adminEnv)
    const bad: [string, object][] = [
      ['more than rate_limited', row({ rate_limited_by: { burst: 4, requests: 2 } })],
      ['with no rate_limited', row({ outcomes: { valid: 1 }, rate_limited_by: { burst: 1 } })],
      ['a name in capitals', row({ rate_limited_by: { Burst: 1 } })],
      ['a name with a space', row({ rate_limited_by: { 'a b': 1 } })],
      ['a negative count', row({ rate_limited_by: { burst: -1 } })],
      ['a fraction', row({ rate_limited_by: { burst: 0.5 } })],
      ['not an object', row({ rate_limited_by: [1] })],
    ]
    for (const [what, counts] of bad) {
      const res = await report(what.replaceAll(' ', '-'), [counts])
      expect([what, res.status, res.body.message]).toEqual([what, 422, 'resources are invalid'])
    }
    const past = await report('past', [row({ rate_limited_by: { burst: 6 } })])
    expect(past.body.details).toBe('rate_limited_by adds up to more than its rate_limited')
    expect(await limitedRows(h.ctx.db, 'usage_limited_minutes')).toEqual({})
    expect(await h.ctx.db.selectFrom('usage_reports').selectAll().execute()).toEqual([])
  })
})

describe('a worker', () => {
  it('hands its split to the primary, which writes it with the counts', async () => {
    h = await harness()
    const a = h.alice.defaultToken.id
    const log = pino({ level: 'silent' })
    const primary = WorkersUsage.open(h.ctx.config, log, () => h.clock.now)
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
    worker.countLimitedAs('alice', a, 'burst', 2)
    worker.countLimitedAs('alice', a, 'requests')
    await worker.flush()
    h.clock.now = T0 + second
    worker.countLimitedAs('alice', a, 'burst')
    await worker.flush()
    await primary.close()
    expect(await limitedRows(h.ctx.db, 'usage_limited_minutes')).toEqual({
      [`alice/${a} 2026-11-22T12:00 burst`]: 3,
      [`alice/${a} 2026-11-22T12:00 requests`]: 1,
    })
    const totals = await h.ctx.usage.totalsSplit('alice', { from: T0, to: T0 + hour })
    expect(totals).toEqual({
      totals: { rate_limited: 4 },
      rate_limited_by: { burst: 3, requests: 1 },
    })
  })

  it('refuses a hand-over whose split is not one', () => {
    const window = { minute: T0, counts: [['alice ', [0, 0, 0, 0, 0, 1, 0, 0, 0, 0]]] }
    const message = (limited: unknown) => ({ tessera: 'usage', windows: [{ ...window, limited }] })
    expect(isUsageHandover({ tessera: 'usage', windows: [window] })).toBe(true)
    expect(isUsageHandover(message([['alice ', [['burst', 1]]]]))).toBe(true)
    expect(isUsageHandover(message([['alice ', [['burst', '1']]]]))).toBe(false)
    expect(isUsageHandover(message({ 'alice ': { burst: 1 } }))).toBe(false)
  })
})
