import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

describe('tokens restricted to IP ranges (allowedIps)', () => {
  let h: Harness
  let writer: string

  beforeEach(async () => {
    h = await harness(adminEnv)
    writer = (await h.token('alice', [...all, 'styles:read'])).token
  })
  afterEach(() => h.close())

  const create = (body: Record<string, unknown>) =>
    call(h.app, 'POST', '/tokens/v2/alice', writer, body)

  /** A request of the token API from a client address (and headers, for a proxy). */
  const from = async (token: string, ip: string, headers: Record<string, string> = {}) =>
    (
      await h.app.inject({
        method: 'GET',
        url: `/tokens/v2/alice?access_token=${token}`,
        remoteAddress: ip,
        headers,
      })
    ).statusCode

  it('normalises the ranges, shows them only when set, and refuses malformed ones', async () => {
    const res = await create({
      scopes: ['tokens:read'],
      allowedIps: [
        ' 203.0.113.7 ',
        '198.51.100.0/24',
        '2001:DB8:0:0::0/32',
        '10.0.0.1/32',
        '198.51.100.0/24',
      ],
    })
    expect(res.status).toBe(200)
    expect(res.body.allowedIps).toEqual([
      '203.0.113.7',
      '198.51.100.0/24',
      '2001:db8::/32',
      '10.0.0.1',
    ])
    const plain = await create({ scopes: ['styles:read'] })
    expect(plain.body).not.toHaveProperty('allowedIps')
    // The same fields in the same order, and allowedIps: clients see nothing new otherwise.
    expect(Object.keys(res.body).filter((k) => k !== 'allowedIps')).toEqual(Object.keys(plain.body))
    const refused = [
      { allowedIps: ['300.1.1.1'] },
      { allowedIps: ['10.0.0.0/33'] },
      { allowedIps: ['example.com'] },
      { allowedIps: ['10.0.0.0/8/8'] },
      { allowedIps: Array.from({ length: 101 }, (_, i) => `10.0.0.${i % 250}`) },
      { allowedIps: ['10.0.0.1'], expires: new Date(T0 + 60_000).toISOString() },
    ]
    for (const body of refused) {
      const r = await create({ scopes: ['styles:read'], ...body })
      expect([r.status, r.body.message], JSON.stringify(body).slice(0, 60)).toEqual([
        422,
        'resources are invalid',
      ])
    }
    // An update sets and clears them.
    const set = await call(h.app, 'PATCH', `/tokens/v2/alice/${plain.body.id}`, writer, {
      allowedIps: ['192.0.2.0/24'],
    })
    expect(set.body.allowedIps).toEqual(['192.0.2.0/24'])
    const cleared = await call(h.app, 'PATCH', `/tokens/v2/alice/${plain.body.id}`, writer, {
      allowedIps: null,
    })
    expect(cleared.body).not.toHaveProperty('allowedIps')
  })

  it("is used from its ranges only: Tessera's API answers 401 elsewhere; retrieve is unchanged", async () => {
    const made = await create({
      scopes: ['tokens:read'],
      allowedIps: ['203.0.113.0/24', '2001:db8::/32'],
    })
    const token = made.body.token
    const cases: [string, number][] = [
      ['203.0.113.9', 200],
      ['203.0.114.1', 401],
      ['::ffff:203.0.113.9', 200],
      ['::ffff:198.51.100.1', 401],
      ['2001:db8:1::5', 200],
      ['2001:db9::1', 401],
      ['127.0.0.1', 401],
    ]
    for (const [ip, status] of cases) expect(await from(token, ip), ip).toBe(status)
    expect((await call(h.app, 'GET', '/tokens/v2', token)).body.code).toBe('TokenValid')
  })

  it('takes the client address from X-Forwarded-For behind TRUST_PROXY=1', async () => {
    await h.close()
    h = await harness({ ...adminEnv, TRUST_PROXY: '1' })
    writer = (await h.token('alice', [...all])).token
    // Created in process: the API itself would want X-Forwarded-Proto.
    const made = await h.ctx.tokens.create(
      h.alice,
      h.ctx.accounts.holder(h.alice),
      { scopes: ['tokens:read'], allowedIps: ['203.0.113.7'] },
      cliActor,
    )
    const token = made.token as string
    const proxied = { 'x-forwarded-proto': 'https' }
    expect(await from(token, '10.0.0.2', { ...proxied, 'x-forwarded-for': '203.0.113.7' })).toBe(
      200,
    )
    expect(await from(token, '10.0.0.2', { ...proxied, 'x-forwarded-for': '198.51.100.1' })).toBe(
      401,
    )
    // The proxy's word wins over the address of the connection (the proxy's own).
    expect(
      await from(token, '203.0.113.7', { ...proxied, 'x-forwarded-for': '198.51.100.1' }),
    ).toBe(401)
  })

  it('answers introspection with the ranges, and inactive for an address outside them', async () => {
    const made = await create({ scopes: ['tokens:read'], allowedIps: ['203.0.113.0/24'] })
    const inside = await admin(h.app, 'POST', '/introspect', {
      token: made.body.token,
      ip: '203.0.113.5',
    })
    expect(inside.body).toMatchObject({ active: true, allowedIps: ['203.0.113.0/24'] })
    const outside = await admin(h.app, 'POST', '/introspect', {
      token: made.body.token,
      ip: '192.0.2.1',
    })
    expect(outside.body).toEqual({ active: false, code: 'TokenValid', reason: 'ip_not_allowed' })
    const noIp = await admin(h.app, 'POST', '/introspect', { token: made.body.token })
    expect(noIp.body.active).toBe(true)
  })
})
