import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Tessera's `expiresAt`: an optional end of life on a pk or sk, an extension field like
 * `allowedIps` (in the token object only when set), distinct from `expires` (a temporary token).
 */
describe('the end of life of permanent tokens (expiresAt)', () => {
  let h: Harness
  let writer: string

  beforeEach(async () => {
    h = await harness(adminEnv)
    writer = (await h.token('alice', [...all, 'styles:read'])).token
  })
  afterEach(() => h.close())

  const iso = (ms: number) => new Date(ms).toISOString()
  const create = (body: Record<string, unknown>, token = writer) =>
    call(h.app, 'POST', '/tokens/v2/alice', token, body)
  const retrieve = async (token: string) => (await call(h.app, 'GET', '/tokens/v2', token)).body
  const introspect = async (token: string) =>
    (await admin(h.app, 'POST', '/introspect', { token })).body
  const invalid = (details: string) => ({ message: 'resources are invalid', details })

  it('shows expiresAt on create, list, update and roll only when set; update removes it', async () => {
    const res = await create({ scopes: ['styles:read'], expiresAt: '2026-11-23T13:00:00+01:00' })
    expect(res.status).toBe(200)
    expect(res.body.expiresAt).toBe('2026-11-23T12:00:00.000Z')
    const plain = await create({ scopes: ['styles:read'] })
    expect(plain.body).not.toHaveProperty('expiresAt')
    // The same fields in the same order, and expiresAt last: clients see nothing new otherwise.
    expect(Object.keys(res.body)).toEqual([
      ...Object.keys(plain.body).filter((k) => k !== 'token'),
      'expiresAt',
      'token',
    ])
    const listed = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    const byId = (id: string) => listed.find((t: { id: string }) => t.id === id)
    expect(byId(res.body.id).expiresAt).toBe('2026-11-23T12:00:00.000Z')
    expect(byId(plain.body.id)).not.toHaveProperty('expiresAt')

    const path = `/tokens/v2/alice/${plain.body.id}`
    const set = await call(h.app, 'PATCH', path, writer, { expiresAt: '2027-01-01T00:00:00Z' })
    expect([set.status, set.body.expiresAt]).toEqual([200, '2027-01-01T00:00:00.000Z'])
    const kept = await call(h.app, 'PATCH', path, writer, { note: 'n' })
    expect(kept.body.expiresAt).toBe('2027-01-01T00:00:00.000Z')
    const removed = await call(h.app, 'PATCH', path, writer, { expiresAt: null })
    expect(removed.status).toBe(200)
    expect(removed.body).not.toHaveProperty('expiresAt')
    const again = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    expect(again.find((t: { id: string }) => t.id === plain.body.id)).not.toHaveProperty(
      'expiresAt',
    )

    // A roll keeps the end of life: the new token ends when the old one would have.
    const rolled = await call(h.app, 'POST', `/tokens/v2/alice/${res.body.id}/roll`, writer)
    expect(rolled.status).toBe(200)
    expect(rolled.body.expiresAt).toBe('2026-11-23T12:00:00.000Z')
    // The admin API's listing shows it as well.
    const adminList = (await admin(h.app, 'GET', '/accounts/alice/tokens')).body
    const adminRolled = adminList.find((t: { id: string }) => t.id === rolled.body.id)
    expect(adminRolled.expiresAt).toBe('2026-11-23T12:00:00.000Z')
  })

  it('is TokenExpired from that moment: retrieve, the guard, introspection and the meter', async () => {
    const end = T0 + 60_000
    const made = await create({ scopes: ['tokens:read'], expiresAt: iso(end) })
    const { id, token } = made.body
    const described = { usage: 'sk', user: 'alice', authorization: id }
    expect(await retrieve(token)).toEqual({ code: 'TokenValid', token: described })
    expect((await call(h.app, 'GET', '/tokens/v2/alice', token)).status).toBe(200)
    expect(await introspect(token)).toMatchObject({ active: true, id, exp: end / 1000 })

    h.clock.now = end - 1
    expect((await retrieve(token)).code).toBe('TokenValid')
    h.clock.now = end
    expect(await retrieve(token)).toEqual({ code: 'TokenExpired', token: described })
    const guarded = await call(h.app, 'GET', '/tokens/v2/alice', token)
    expect([guarded.status, guarded.body]).toEqual([
      401,
      { message: 'Unauthorized', details: 'the token has expired' },
    ])
    expect(await introspect(token)).toEqual({ active: false, code: 'TokenExpired' })
    h.clock.now = end + 86_400_000
    expect(await retrieve(token)).toEqual({ code: 'TokenExpired', token: described })

    // Counted expired against the token itself: its account and id.
    await h.ctx.usage.flush()
    const range = { from: T0 - 3_600_000, to: h.clock.now + 60_000, token: id }
    expect(await h.ctx.usage.totals('alice', range)).toEqual({ valid: 4, expired: 4 })

    // Given a new end of life, it works again.
    const path = `/tokens/v2/alice/${id}`
    const later = iso(h.clock.now + 60_000)
    expect((await call(h.app, 'PATCH', path, writer, { expiresAt: later })).status).toBe(200)
    expect((await retrieve(token)).code).toBe('TokenValid')
  })

  it("gives introspection the earlier of expiresAt and a rolled token's end as exp", async () => {
    const end = T0 + 3_600_000
    const made = await create({ scopes: ['styles:read'], expiresAt: iso(end) })
    const plain = await create({ scopes: ['styles:read'] })
    expect(await introspect(plain.body.token)).not.toHaveProperty('exp')
    const roll = (id: string, expires: number) =>
      call(h.app, 'POST', `/tokens/v2/alice/${id}/roll`, writer, { expires: iso(expires) })
    expect((await roll(made.body.id, T0 + 7_200_000)).status).toBe(200)
    expect((await introspect(made.body.token)).exp).toBe(end / 1000)
    const rolled = await create({ scopes: ['styles:read'], expiresAt: iso(end) })
    expect((await roll(rolled.body.id, T0 + 1_800_000)).status).toBe(200)
    expect((await introspect(rolled.body.token)).exp).toBe((T0 + 1_800_000) / 1000)
  })

  it('refuses an end of life not in the future, too far, not a date, or with expires', async () => {
    const tomorrow = iso(T0 + 86_400_000)
    const cases: [Record<string, unknown>, string][] = [
      [{ expiresAt: iso(T0 - 1000) }, 'expiresAt must be in the future'],
      [{ expiresAt: iso(T0) }, 'expiresAt must be in the future'],
      [
        { expiresAt: iso(T0 + 3661 * 86_400_000 + 1) },
        'expiresAt may be at most 10 years in the future',
      ],
      [{ expiresAt: 'tomorrow' }, 'expiresAt must be an ISO 8601 timestamp'],
      [{ expiresAt: '2026-11-31T00:00:00Z' }, 'expiresAt must be an ISO 8601 timestamp'],
      [
        { expiresAt: tomorrow, expires: iso(T0 + 60_000) },
        'a body with expires makes a temporary token: omit expiresAt',
      ],
    ]
    for (const [body, details] of cases) {
      const res = await create({ scopes: ['styles:read'], ...body })
      expect([res.status, res.body], JSON.stringify(body)).toEqual([422, invalid(details)])
    }
    // Not a string: refused by the schema, with the same message.
    for (const expiresAt of [12345, null, ['2027-01-01T00:00:00Z']]) {
      const res = await create({ expiresAt })
      expect([res.status, res.body.message]).toEqual([422, 'resources are invalid'])
    }
    // A temporary token authorising a temporary token with an end of life: the same 422; a
    // permanent token, whatever its body, is not a tk's to make (the contract's 404).
    const tk = (await create({ expires: iso(T0 + 600_000), scopes: ['tokens:write'] })).body.token
    const both = await create({ expires: iso(T0 + 60_000), expiresAt: tomorrow }, tk)
    expect([both.status, both.body]).toEqual([
      422,
      invalid('a body with expires makes a temporary token: omit expiresAt'),
    ])
    expect((await create({ expiresAt: tomorrow }, tk)).status).toBe(404)
    // Update: the same rules; a body of expiresAt alone names a field.
    const plain = await create({ scopes: ['styles:read'] })
    const path = `/tokens/v2/alice/${plain.body.id}`
    const past = await call(h.app, 'PATCH', path, writer, { expiresAt: iso(T0 - 1) })
    expect([past.status, past.body]).toEqual([422, invalid('expiresAt must be in the future')])
    const wrong = await call(h.app, 'PATCH', path, writer, { expiresAt: 7 })
    expect([wrong.status, wrong.body.message]).toEqual([422, 'resources are invalid'])
  })
})
