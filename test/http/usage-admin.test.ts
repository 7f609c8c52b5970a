import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { outcomeIndex as o } from '../../src/usage/outcomes.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/** The admin API's usage: an account's series and tokens, exactly as counted. */

let h: Harness
beforeEach(async () => {
  h = await harness({ ...adminEnv, PUBLIC_URL: 'https://tokens.example.com' })
})
afterEach(() => h.close())

const minute = 60_000
const hour = 60 * minute

/** Counts at 12:05, 12:59, 13:30 and 15:00 on T0's day, and one on the next day. */
async function counted() {
  const a = h.alice.defaultToken.id
  const at = async (ms: number, count: () => void) => {
    h.clock.now = ms
    count()
    await h.ctx.usage.flush()
  }
  await at(T0 + 5 * minute, () => {
    h.ctx.usage.count('alice', a, o.valid, 5)
    h.ctx.usage.count('alice', '', o.expired, 2)
    h.ctx.usage.count('bob', '', o.valid, 9)
  })
  await at(T0 + 59 * minute, () => h.ctx.usage.count('alice', a, o.revoked, 3))
  await at(T0 + hour + 30 * minute, () => h.ctx.usage.count('alice', 'cother', o.valid, 1))
  await at(T0 + 3 * hour, () => h.ctx.usage.count('alice', a, o.rate_limited, 4))
  await at(T0 + 24 * hour, () => h.ctx.usage.count('alice', a, o.valid, 7))
  return a
}

const q = (params: Record<string, string>) => new URLSearchParams(params).toString()
const day = { from: '2026-11-22T00:00:00Z', to: '2026-11-23T00:00:00Z' }

describe('GET /admin/v1/accounts/{username}/usage', () => {
  it('answers the buckets with counts, oldest first, and the totals of the range', async () => {
    await counted()
    const res = await admin(h.app, 'GET', `/accounts/alice/usage?${q(day)}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      resolution: 'hour',
      from: '2026-11-22T00:00:00.000Z',
      to: '2026-11-23T00:00:00.000Z',
      series: [
        { start: '2026-11-22T12:00:00.000Z', outcomes: { valid: 5, expired: 2, revoked: 3 } },
        { start: '2026-11-22T13:00:00.000Z', outcomes: { valid: 1 } },
        { start: '2026-11-22T15:00:00.000Z', outcomes: { rate_limited: 4 } },
      ],
      totals: { valid: 6, expired: 2, revoked: 3, rate_limited: 4 },
    })
    const days = await admin(
      h.app,
      'GET',
      `/accounts/alice/usage?${q({ from: '2026-11-01', to: '2026-12-01', resolution: 'day' })}`,
    )
    expect(days.body.series).toEqual([
      {
        start: '2026-11-22T00:00:00.000Z',
        outcomes: { valid: 6, expired: 2, revoked: 3, rate_limited: 4 },
      },
      { start: '2026-11-23T00:00:00.000Z', outcomes: { valid: 7 } },
    ])
    expect(days.body.totals).toEqual({ valid: 13, expired: 2, revoked: 3, rate_limited: 4 })
  })

  it('takes the buckets that overlap [from, to) at each resolution, and one token', async () => {
    const a = await counted()
    const range = { from: '2026-11-22T12:30:00Z', to: '2026-11-22T13:30:00Z' }
    const minutes = await admin(
      h.app,
      'GET',
      `/accounts/alice/usage?${q({ ...range, resolution: 'minute' })}`,
    )
    expect(minutes.body.series).toEqual([
      { start: '2026-11-22T12:59:00.000Z', outcomes: { revoked: 3 } },
    ])
    const hours = await admin(h.app, 'GET', `/accounts/alice/usage?${q({ ...range, token: a })}`)
    expect(hours.body.series).toEqual([
      { start: '2026-11-22T12:00:00.000Z', outcomes: { valid: 5, revoked: 3 } },
    ])
    expect(hours.body.totals).toEqual({ valid: 5, revoked: 3 })
    const none = await admin(h.app, 'GET', `/accounts/alice/usage?${q({ ...day, token: '' })}`)
    expect(none.body.series).toEqual([
      { start: '2026-11-22T12:00:00.000Z', outcomes: { expired: 2 } },
    ])
  })

  it('pages by limit with next (and a Link header); totals stay those of the whole range', async () => {
    await counted()
    const first = await admin(h.app, 'GET', `/accounts/alice/usage?${q({ ...day, limit: '2' })}`)
    const next =
      '/admin/v1/accounts/alice/usage?from=2026-11-22T00%3A00%3A00.000Z&to=2026-11-23T00%3A00%3A00.000Z&resolution=hour&limit=2&start=2026-11-22T13%3A00%3A00.000Z'
    expect(first.body.series.map((b: { start: string }) => b.start)).toEqual([
      '2026-11-22T12:00:00.000Z',
      '2026-11-22T13:00:00.000Z',
    ])
    expect(first.body.next).toBe(next)
    expect(first.headers.link).toBe(`<https://tokens.example.com${next}>; rel="next"`)
    expect(first.body.totals).toEqual({ valid: 6, expired: 2, revoked: 3, rate_limited: 4 })
    const second = await admin(h.app, 'GET', next.slice('/admin/v1'.length))
    expect(second.body).toEqual({
      resolution: 'hour',
      from: '2026-11-22T00:00:00.000Z',
      to: '2026-11-23T00:00:00.000Z',
      series: [{ start: '2026-11-22T15:00:00.000Z', outcomes: { rate_limited: 4 } }],
      totals: { valid: 6, expired: 2, revoked: 3, rate_limited: 4 },
    })
    expect(second.headers.link).toBeUndefined()
  })

  it('answers an account with nothing counted with empty buckets', async () => {
    const res = await admin(h.app, 'GET', `/accounts/alice/usage?${q(day)}`)
    expect(res.body).toEqual({ resolution: 'hour', ...isoDay(), series: [], totals: {} })
  })

  it('refuses an unknown account, bad times, resolutions, tokens, limits and cursors', async () => {
    const refusals: [string, number, object][] = [
      [
        `/accounts/nobody/usage?${q(day)}`,
        404,
        { message: 'No such user', details: 'no such account: nobody' },
      ],
      [`/accounts/alice/usage?${q({ to: day.to })}`, 422, { message: 'resources are invalid' }],
      [
        `/accounts/alice/usage?${q({ ...day, from: 'yesterday' })}`,
        422,
        { message: 'resources are invalid', details: 'from must be an ISO 8601 date or timestamp' },
      ],
      [
        `/accounts/alice/usage?${q({ from: day.to, to: day.from })}`,
        422,
        { message: 'resources are invalid', details: 'from must be before to' },
      ],
      [
        `/accounts/alice/usage?${q({ ...day, resolution: 'week' })}`,
        422,
        { message: 'resources are invalid' },
      ],
      [
        `/accounts/alice/usage?${q({ ...day, token: 'x' })}`,
        422,
        { message: 'resources are invalid' },
      ],
      [
        `/accounts/alice/usage?${q({ ...day, limit: '101' })}`,
        422,
        { message: 'limit must be an integer between 1 and 100' },
      ],
      [`/accounts/alice/usage?${q({ ...day, start: 'x' })}`, 422, { message: 'start is invalid' }],
    ]
    for (const [url, status, body] of refusals) {
      const res = await admin(h.app, 'GET', url)
      expect([url, res.status, res.body]).toEqual([url, status, body])
    }
    const keyless = await admin(h.app, 'GET', `/accounts/alice/usage?${q(day)}`, undefined, null)
    expect(keyless.status).toBe(401)
  })
})

describe('GET /admin/v1/accounts/{username}/usage/tokens', () => {
  it("answers each token's sums, the most counted first", async () => {
    const a = await counted()
    const res = await admin(h.app, 'GET', `/accounts/alice/usage/tokens?${q(day)}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      tokens: [
        { token: a, outcomes: { valid: 5, revoked: 3, rate_limited: 4 } },
        { token: '', outcomes: { expired: 2 } },
        { token: 'cother', outcomes: { valid: 1 } },
      ],
    })
    const bob = await admin(h.app, 'GET', `/accounts/bob/usage/tokens?${q(day)}`)
    expect(bob.body).toEqual({ tokens: [{ token: '', outcomes: { valid: 9 } }] })
    expect((await admin(h.app, 'GET', `/accounts/nobody/usage/tokens?${q(day)}`)).status).toBe(404)
  })
})

function isoDay() {
  return { from: '2026-11-22T00:00:00.000Z', to: '2026-11-23T00:00:00.000Z' }
}
