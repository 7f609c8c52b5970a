import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { call, type Harness, harness, T0, tampered } from '../helpers.js'

/**
 * Last use (minute precision) and validations per hour: counted in memory on the hot path,
 * written once a minute, never a write per request.
 */

let h: Harness
beforeEach(async () => {
  h = await harness()
})
afterEach(() => h.close())

const retrieve = (token: string) => call(h.app, 'GET', `/tokens/v2?access_token=${token}`)
const rows = async () =>
  (await sql<{ n: number }>`select count(*) as n from usage_hours`.execute(h.ctx.db)).rows[0]?.n

describe('token usage', () => {
  it('counts validations in memory and writes them at the flush, with the minute of last use', async () => {
    const pk = await h.token('alice', ['styles:read'])
    h.clock.now = T0 + 5 * 60_000 + 17_000 // 12:05:17
    for (let i = 0; i < 7; i++) expect((await retrieve(pk.token)).body.code).toBe('TokenValid')
    expect(Number(await rows())).toBe(0)
    expect(await h.ctx.usage.activity(pk.id)).toEqual({ hours: [] })
    await h.ctx.usage.flush()
    expect(await h.ctx.usage.activity(pk.id)).toEqual({
      lastUsed: '2026-11-22T12:05:00.000Z',
      hours: [{ hour: '2026-11-22T12', count: 7 }],
    })
    h.clock.now = T0 + 65 * 60_000 // 13:05
    await retrieve(pk.token)
    // A pk may not list: metered scope_missing, which activity (valid counts) leaves out.
    await call(h.app, 'GET', '/tokens/v2/alice', pk.token)
    await h.ctx.usage.flush()
    expect(await h.ctx.usage.activity(pk.id)).toEqual({
      lastUsed: '2026-11-22T13:05:00.000Z',
      hours: [
        { hour: '2026-11-22T12', count: 7 },
        { hour: '2026-11-22T13', count: 1 },
      ],
    })
    const last = await h.ctx.usage.lastUsed([pk.id, h.alice.defaultToken.id])
    expect([...last]).toEqual([[pk.id, '2026-11-22T13:05:00.000Z']])
  })

  it('writes and reads the counts of many tokens at once (statements in runs of powers of two)', async () => {
    const tokens = []
    for (let i = 0; i < 7; i++) tokens.push(await h.token('alice', ['styles:read']))
    h.clock.now = T0 + 3 * 60_000
    for (const [i, t] of tokens.entries()) {
      for (let n = 0; n <= i; n++) await retrieve(t.token)
    }
    await h.ctx.usage.flush() // 7 tokens: runs of 4, 2 and 1, in one transaction
    const ids = tokens.map((t) => t.id)
    const last = await h.ctx.usage.lastUsed([...ids, h.alice.defaultToken.id])
    expect([...last].sort()).toEqual(ids.map((id) => [id, '2026-11-22T12:03:00.000Z']).sort())
    for (const [i, t] of tokens.entries()) {
      expect(await h.ctx.usage.activity(t.id)).toEqual({
        lastUsed: '2026-11-22T12:03:00.000Z',
        hours: [{ hour: '2026-11-22T12', count: i + 1 }],
      })
    }
  })

  it("shows a token's valid validations only; the rest is metered elsewhere", async () => {
    const sk = await h.token('alice', ['tokens:write', 'tokens:read'])
    const expires = new Date(T0 + 600_000).toISOString()
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, { expires })
    await retrieve(tk.body.token)
    await retrieve(tampered(sk.token))
    await call(h.app, 'DELETE', `/tokens/v2/alice/${h.alice.defaultToken.id}`, sk.token)
    await h.ctx.usage.flush()
    // The POST and the DELETE validated the sk twice; the rest counts nothing.
    expect(await h.ctx.usage.activity(sk.id)).toEqual({
      lastUsed: '2026-11-22T12:00:00.000Z',
      hours: [{ hour: '2026-11-22T12', count: 2 }],
    })
    // The sk's row, the tk's (alice, '') and the tampered string's ('', '').
    expect(Number(await rows())).toBe(3)
  })

  it('keeps the counts of a failed write for the next flush', async () => {
    const pk = await h.token('alice', ['styles:read'])
    await retrieve(pk.token)
    await sql`alter table usage_hours rename to usage_hours_away`.execute(h.ctx.db)
    try {
      await h.ctx.usage.flush()
    } finally {
      await sql`alter table usage_hours_away rename to usage_hours`.execute(h.ctx.db)
    }
    await retrieve(pk.token)
    await h.ctx.usage.flush()
    expect((await h.ctx.usage.activity(pk.id)).hours).toEqual([{ hour: '2026-11-22T12', count: 2 }])
  })

  it('forgets hours older than 30 days and the last use of deleted tokens, not their counts', async () => {
    const pk = await h.token('alice', ['styles:read'])
    const other = await h.token('alice', ['styles:read'])
    await retrieve(pk.token)
    await retrieve(other.token)
    await h.ctx.usage.flush()
    await h.ctx.tokens.remove(h.alice, other.id, { type: 'cli' })
    h.clock.now = T0 + 29 * 86_400_000
    await retrieve(pk.token)
    await h.ctx.usage.flush()
    await h.ctx.prune()
    // The deleted token's hour stays: the account's history (docs/metering.md, "Retention").
    expect(Number(await rows())).toBe(3)
    h.clock.now = T0 + 31 * 86_400_000
    await h.ctx.prune()
    expect(await h.ctx.usage.activity(pk.id)).toEqual({
      lastUsed: '2026-12-21T12:00:00.000Z',
      hours: [{ hour: '2026-12-21T12', count: 1 }],
    })
    expect(await h.ctx.usage.lastUsed([other.id])).toEqual(new Map())
  })
})
