import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

const hour = 3_600_000
const retrieve = async (h: Harness, token: string) =>
  (await call(h.app, 'GET', '/tokens/v2', token)).body.code

describe('rolling a token (POST /tokens/v2/{username}/{token_id}/roll)', () => {
  let h: Harness
  let writer: string

  beforeEach(async () => {
    h = await harness(adminEnv)
    writer = (await h.token('alice', [...all, 'styles:read', 'fonts:read'])).token
  })
  afterEach(() => h.close())

  const roll = (id: string, body?: unknown, token = writer) =>
    call(h.app, 'POST', `/tokens/v2/alice/${id}/roll`, token, body)

  it('answers a new token shaped like a create, and the old string stops at once', async () => {
    const old = await h.token('alice', ['styles:read'], {
      note: 'website',
      allowedUrls: ['https://example.com'],
    })
    h.clock.now += 1000
    const res = await roll(old.id)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      client: 'api',
      usage: 'pk',
      id: expect.stringMatching(/^c[a-z0-9]{24}$/),
      default: false,
      note: 'website',
      scopes: ['styles:read'],
      allowedUrls: ['https://example.com'],
      created: new Date(T0 + 1000).toISOString(),
      modified: new Date(T0 + 1000).toISOString(),
      token: expect.stringMatching(/^pk\./),
    })
    expect(res.body.id).not.toBe(old.id)
    expect(await retrieve(h, old.token)).toBe('TokenRevoked')
    expect(await retrieve(h, res.body.token)).toBe('TokenValid')
    const ids = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body.map(
      (t: { id: string }) => t.id,
    )
    expect(ids).not.toContain(old.id)
    expect(ids).toContain(res.body.id)
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body
    expect(events.map((e: { target: unknown; details: unknown }) => [e.target, e.details])).toEqual(
      [
        [
          { type: 'token', id: res.body.id },
          { previous: old.id, usage: 'pk', retires: new Date(T0 + 1000).toISOString() },
        ],
      ],
    )
  })

  it('keeps the old string valid until expires, then revokes it; never later than it ends', async () => {
    const old = await h.token('alice', ['styles:read', 'tokens:read'], { note: 'server' })
    const first = await roll(old.id, { expires: new Date(T0 + hour).toISOString() })
    expect(first.status).toBe(200)
    expect(first.body.usage).toBe('sk')
    expect(await retrieve(h, old.token)).toBe('TokenValid')
    // Still listed while it works (with its string hidden, as an sk).
    const listed = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    expect(listed.map((t: { id: string }) => t.id)).toEqual(
      expect.arrayContaining([old.id, first.body.id]),
    )
    // Rolled again, later: its end stays where it was.
    const second = await roll(old.id, { expires: new Date(T0 + 20 * hour).toISOString() })
    expect(second.status).toBe(200)
    h.clock.now = T0 + hour - 1
    expect(await retrieve(h, old.token)).toBe('TokenValid')
    h.clock.now = T0 + hour
    expect(await retrieve(h, old.token)).toBe('TokenRevoked')
    expect(await retrieve(h, first.body.token)).toBe('TokenValid')
    expect((await roll(old.id)).status).toBe(404)
    expect(await h.ctx.tokens.sweepRetired()).toBe(1)
    const after = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    expect(after.map((t: { id: string }) => t.id)).not.toContain(old.id)
  })

  it('makes the new token the default when the default is rolled', async () => {
    // The caller holds every scope of the default token (all the public ones).
    const holder = await h.token('alice', [...new Set([...all, ...h.alice.defaultToken.scopes])])
    const res = await roll(h.alice.defaultToken.id, undefined, holder.token)
    expect(res.status).toBe(200)
    expect(res.body.default).toBe(true)
    expect(res.body.note).toBe('Default public token')
    const list = (await call(h.app, 'GET', '/tokens/v2/alice?default=true', writer)).body
    expect(list.map((t: { id: string }) => t.id)).toEqual([res.body.id])
    expect(await retrieve(h, h.alice.defaultToken.token as string)).toBe('TokenRevoked')
  })

  it('refuses by the rules of update, and changes nothing', async () => {
    const target = await h.token('alice', ['styles:read', 'fonts:read'])
    const narrow = (await h.token('alice', ['tokens:write', 'styles:read'])).token
    const reader = (await h.token('alice', ['tokens:read', 'styles:read'])).token
    const tk = (
      await call(h.app, 'POST', '/tokens/v2/alice', writer, {
        scopes: ['tokens:write', 'styles:read', 'fonts:read'],
        expires: new Date(T0 + 60_000).toISOString(),
      })
    ).body.token
    const cases: [string, () => ReturnType<typeof roll>, number, unknown][] = [
      [
        'too far',
        () => roll(target.id, { expires: new Date(T0 + 24 * hour + 1).toISOString() }),
        422,
        { message: 'expires is more than 24 hours in the future' },
      ],
      [
        'in the past',
        () => roll(target.id, { expires: new Date(T0 - 1).toISOString() }),
        422,
        { message: 'expires is in the past' },
      ],
      [
        'not a timestamp',
        () => roll(target.id, { expires: 'soon' }),
        422,
        { message: 'resources are invalid', details: 'expires must be an ISO 8601 timestamp' },
      ],
      [
        'an unknown field',
        () => roll(target.id, { note: 'x' }),
        422,
        { message: 'resources are invalid', details: 'unknown field: note' },
      ],
      [
        'not an object',
        () => roll(target.id, [1]),
        422,
        { message: 'resources are invalid', details: 'the body must be a JSON object' },
      ],
      [
        'a scope the caller lacks',
        () => roll(target.id, undefined, narrow),
        422,
        {
          message: 'scopes are invalid',
          details: 'the authorizing token does not hold fonts:read',
        },
      ],
      [
        'a temporary token',
        () => roll(target.id, undefined, tk),
        422,
        { message: 'temporary tokens cannot be rolled' },
      ],
      [
        'without tokens:write',
        () => roll(target.id, undefined, reader),
        404,
        { message: 'Not found', details: 'the token lacks tokens:write' },
      ],
      [
        'an unknown id',
        () => roll('cabcdefghijklmnopqrstuvwxy'),
        404,
        { message: 'Not found', details: 'no token with this id in this account' },
      ],
      [
        'another account',
        () => roll(h.bob.defaultToken.id),
        404,
        { message: 'Not found', details: 'no token with this id in this account' },
      ],
    ]
    for (const [name, request, status, body] of cases) {
      const res = await request()
      expect([res.status, res.body], name).toEqual([status, body])
    }
    expect(await retrieve(h, target.token)).toBe('TokenValid')
    expect((await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body).toEqual(
      [],
    )
  })

  it('rolls through the admin API too', async () => {
    const old = await h.token('alice', ['styles:read'])
    const res = await admin(h.app, 'POST', `/accounts/alice/tokens/${old.id}/roll`, {
      expires: new Date(T0 + hour).toISOString(),
    })
    expect(res.status).toBe(200)
    expect(res.body.token).toMatch(/^pk\./)
    expect(await retrieve(h, old.token)).toBe('TokenValid')
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.rolled')).body
    expect(events[0].actor).toEqual({ type: 'admin', id: 'k1' })
  })
})
