import { afterEach, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, T0, tampered } from '../helpers.js'
import { usageRows } from './usage-helpers.js'

/**
 * Every request that presents a token to retrieve or to the token API is metered once, by
 * outcome, against whom the token names (docs/metering.md): counted in memory, written at the
 * flush to the minute, hour and day rows.
 */

let h: Harness
afterEach(() => h.close())

const retrieve = (token: string) => call(h.app, 'GET', `/tokens/v2?access_token=${token}`)

describe('metering retrieve', () => {
  it('counts each outcome once per request, per token and minute', async () => {
    h = await harness()
    const pk = await h.token('alice', ['styles:read'])
    const gone = await h.token('alice', ['styles:read'])
    const sk = await h.token('alice', all)
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, {
      expires: new Date(T0 + 600_000).toISOString(),
    })
    await h.ctx.tokens.remove(h.alice, gone.id, { type: 'cli' })
    h.clock.now = T0 + 2 * 60_000 + 5_000 // 12:02:05
    for (let i = 0; i < 3; i++) expect((await retrieve(pk.token)).body.code).toBe('TokenValid')
    expect((await retrieve(tk.body.token)).body.code).toBe('TokenValid')
    expect((await retrieve(gone.token)).body.code).toBe('TokenRevoked')
    expect((await retrieve('garbage')).body.code).toBe('TokenMalformed')
    expect((await retrieve(tampered(pk.token))).body.code).toBe('TokenInvalid')
    expect((await retrieve(tampered(bobToken()))).body.code).toBe('TokenInvalid')
    h.clock.now = T0 + 11 * 60_000 // 12:11: the tk expired at 12:10
    expect((await retrieve(tk.body.token)).body.code).toBe('TokenExpired')
    expect((await retrieve(pk.token)).body.code).toBe('TokenValid')
    await h.ctx.usage.flush()

    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      '/ 2026-11-22T12:02': { malformed: 1, invalid: 2 },
      'alice/ 2026-11-22T12:02': { valid: 1 },
      'alice/ 2026-11-22T12:11': { expired: 1 },
      [`alice/${gone.id} 2026-11-22T12:02`]: { revoked: 1 },
      [`alice/${pk.id} 2026-11-22T12:02`]: { valid: 3 },
      [`alice/${pk.id} 2026-11-22T12:11`]: { valid: 1 },
      [`alice/${sk.id} 2026-11-22T12:00`]: { valid: 1 }, // the tk's create
    })
    expect(await usageRows(h.ctx.db, 'usage_hours')).toEqual({
      '/ 2026-11-22T12': { malformed: 1, invalid: 2 },
      'alice/ 2026-11-22T12': { valid: 1, expired: 1 },
      [`alice/${gone.id} 2026-11-22T12`]: { revoked: 1 },
      [`alice/${pk.id} 2026-11-22T12`]: { valid: 4 },
      [`alice/${sk.id} 2026-11-22T12`]: { valid: 1 },
    })
    expect(await usageRows(h.ctx.db, 'usage_days')).toEqual({
      '/ 2026-11-22': { malformed: 1, invalid: 2 },
      'alice/ 2026-11-22': { valid: 1, expired: 1 },
      [`alice/${gone.id} 2026-11-22`]: { revoked: 1 },
      [`alice/${pk.id} 2026-11-22`]: { valid: 4 },
      [`alice/${sk.id} 2026-11-22`]: { valid: 1 },
    })
    function bobToken() {
      return h.bob.defaultToken.token as string
    }
  })

  it('counts a valid token refused with 429 as rate_limited, and no token as nothing', async () => {
    h = await harness({ RATE_LIMIT_PER_MINUTE: '2' })
    const pk = await h.token('alice', ['styles:read'])
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await retrieve(pk.token)).status)
    expect(statuses).toEqual([200, 200, 429, 429])
    expect((await call(h.app, 'GET', '/tokens/v2')).status).toBe(422)
    await h.ctx.usage.flush()
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      [`alice/${pk.id} 2026-11-22T12:00`]: { valid: 2, rate_limited: 2 },
    })
    // The last use is a valid answer's.
    expect([...(await h.ctx.usage.lastUsed([pk.id]))]).toEqual([
      [pk.id, '2026-11-22T12:00:00.000Z'],
    ])
  })
})

describe('metering the token API', () => {
  it("counts each request once at the guard: valid, refused for the token's address, scope or account, 429, invalid", async () => {
    h = await harness({ RATE_LIMIT_PER_MINUTE: '6' })
    const sk = await h.token('alice', all)
    const pk = await h.token('alice', ['styles:read'])
    const walled = await h.ctx.tokens.create(
      h.alice,
      h.ctx.accounts.holder(h.alice),
      { scopes: all, allowedIps: ['10.0.0.0/8'] },
      { type: 'cli' },
    )
    const list = (token: string, account = 'alice') =>
      call(h.app, 'GET', `/tokens/v2/${account}`, token)
    expect((await list(sk.token)).status).toBe(200)
    expect((await call(h.app, 'POST', '/tokens/v2/alice', sk.token, { note: 'x' })).status).toBe(
      200,
    )
    expect((await list(pk.token)).status).toBe(404) // lacks tokens:read
    expect((await list(sk.token, 'bob')).status).toBe(404) // another account's
    expect((await list(walled.token as string)).status).toBe(401) // not from 10/8
    expect((await list(tampered(sk.token))).status).toBe(401)
    expect((await list('nope')).status).toBe(401)
    // alice's limit of 6 a minute: the sk's 2, the pk's 1, the sk's 1 at bob's: 2 left.
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await list(sk.token)).status)
    expect(statuses).toEqual([200, 200, 429])
    expect((await call(h.app, 'GET', '/tokens/v2/alice')).status).toBe(401) // no token
    await h.ctx.usage.flush()
    expect(await usageRows(h.ctx.db, 'usage_minutes')).toEqual({
      '/ 2026-11-22T12:00': { malformed: 1, invalid: 1 },
      [`alice/${sk.id} 2026-11-22T12:00`]: { valid: 4, rate_limited: 1, scope_missing: 1 },
      [`alice/${pk.id} 2026-11-22T12:00`]: { scope_missing: 1 },
      [`alice/${walled.id} 2026-11-22T12:00`]: { ip_not_allowed: 1 },
    })
    // Only valid counts move the last use.
    const last = await h.ctx.usage.lastUsed([sk.id, pk.id, walled.id])
    expect([...last]).toEqual([[sk.id, '2026-11-22T12:00:00.000Z']])
  })
})
