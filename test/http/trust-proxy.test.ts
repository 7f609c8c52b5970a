import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { ConfigError, toConfig } from '../../src/config.js'
import { DashboardClient } from './dashboard-client.js'
import { closeServing, serving } from './serving.js'

/**
 * TRUST_PROXY names the proxies in front (a hop count, or their addresses), and the client's
 * address is the X-Forwarded-For entry just before theirs: never the first entry, which is
 * whatever the client wrote (an appending proxy, nginx's `$proxy_add_x_forwarded_for`, a cloud
 * load balancer, keeps it). Every reader of the address sees that one: the allowedIps check,
 * the per-address limits of retrieve and leak reports, the sign-in throttle, the audit log.
 * Requests go over a real socket, where the fast paths (src/http/ahead/)
 * meet them before Fastify.
 */
afterEach(closeServing)

const limit = 4
const office = '203.0.113.7'
const attacker = '198.51.100.66'

/** A token restricted to addresses, used from another: 401, saying so. */
const unauthorized = {
  status: 401,
  body: '{"message":"Unauthorized","details":"the token may not be used from this address"}',
}
const tooMany = { status: 429, body: '{"message":"Too Many Requests"}' }
const malformed = { status: 200, body: '{"code":"TokenMalformed"}' }
const accepted = { status: 202, body: '' }
const answer = (a: { status: number; body: string }) => ({ status: a.status, body: a.body })

type Serving = Awaited<ReturnType<typeof serving>>
/** The headers a request of the client at `client` reaches Tessera with, having written `written`. */
type Forward = (client: string, written?: string) => Record<string, string>

/** A token of the serving's first account (or `account`) that may be used from `ip` only. */
async function restrictedTo(s: Serving, ip: string, account = s.h.alice) {
  const { ctx } = s.h
  const made = await ctx.tokens.create(
    account,
    ctx.accounts.holder(account),
    { scopes: ['tokens:read', 'tokens:write'], allowedIps: [ip] },
    cliActor,
  )
  return made.token as string
}

/** A failed sign-in, through the proxy at 127.0.0.1 (inject: the dashboard is Fastify's). */
const signIn = (
  s: Serving,
  username: string,
  headers: Record<string, string>,
  peer = '127.0.0.1',
) =>
  new DashboardClient(s.app, peer).post(
    '/account/sign-in',
    { username, password: 'not the password at all', next: '/account' },
    headers,
  )

/**
 * Refused by the sign-in throttle: 15 minutes from the first failure (less the seconds the
 * failures took, with Redis, which counts them in its own time).
 */
function expectThrottled(page: { status: number; body: string; headers: Record<string, unknown> }) {
  expect(page.status).toBe(429)
  expect(Number(page.headers['retry-after'])).toBeGreaterThan(840)
  expect(Number(page.headers['retry-after'])).toBeLessThanOrEqual(900)
  expect(page.body).toContain('Too many failed sign-in attempts.')
  expect(page.body).toContain('Try again in 15 minutes.')
}

/**
 * The attacker's steps behind a proxy: the client writes an X-Forwarded-For entry of its choice
 * (the office's address, then a fresh one each time), the proxies append theirs (`forward`).
 */
async function attack(s: Serving, forward: Forward) {
  const user = s.h.alice.username
  const token = await restrictedTo(s, office)
  const url = `/tokens/v2/${user}?access_token=${token}`
  const create = JSON.stringify({ scopes: ['tokens:read'], note: 'proxied' })

  // A token restricted to the office's address, used from elsewhere, claiming the office's.
  const claimed = forward(attacker, office)
  expect(answer(await s.socket(url, 'GET', claimed))).toEqual(unauthorized)
  expect(answer(await s.socket(url, 'POST', claimed, create))).toEqual(unauthorized)
  // From the office, whatever its client wrote: the entry its proxy appended is the one.
  const fromOffice = forward(office, '192.0.2.1')
  expect((await s.socket(url, 'GET', fromOffice)).status).toBe(200)
  const made = await s.socket(url, 'POST', fromOffice, create)
  expect(made.status).toBe(200)
  const [event] = await s.h.ctx.audit.list({ limit: 1 })
  expect(event).toMatchObject({
    action: 'token.created',
    target: { id: JSON.parse(made.body).id },
    address: office,
  })

  // Retrieve's limit per address (tokens not valid): a fresh first entry is no fresh bucket.
  // (Another address than the attacker's above: a token refused there counts against it too.)
  const junk = '/tokens/v2?access_token=not-a-token'
  const prober = '198.51.100.77'
  for (let i = 0; i < limit; i++) {
    expect(answer(await s.socket(junk, 'GET', forward(prober, `192.0.2.${i}`)))).toEqual(malformed)
  }
  expect(answer(await s.socket(junk, 'GET', forward(prober, '192.0.2.99')))).toEqual(tooMany)
  expect(answer(await s.socket(junk, 'GET', forward('198.51.100.2')))).toEqual(malformed)

  // Leak reports' limit per address.
  const revoke = (headers: Record<string, string>) =>
    s.socket('/leaks/v1/revoke', 'POST', headers, '{"credentials":[]}')
  const reporter = '198.51.100.88'
  for (let i = 0; i < limit; i++) {
    expect(answer(await revoke(forward(reporter, `192.0.2.${i}`)))).toEqual(accepted)
  }
  expect(answer(await revoke(forward(reporter, '192.0.2.99')))).toEqual(tooMany)
  expect(answer(await revoke(forward('198.51.100.3')))).toEqual(accepted)

  // The dashboard's sign-in throttle: 20 failures per address in 15 minutes.
  const guesser = '198.51.100.99'
  for (let i = 0; i < 20; i++) {
    const page = await signIn(s, `user${i % 5}`, forward(guesser, `192.0.2.${i}`))
    expect(page.status).toBe(401)
  }
  const throttled = await signIn(s, 'user9', forward(guesser, '192.0.2.200'))
  expectThrottled(throttled)
  expect((await signIn(s, 'user9', forward('198.51.100.4'))).status).toBe(401)
}

const https = { 'x-forwarded-proto': 'https' }
/** X-Forwarded-For as written by the client, then appended to by each proxy in turn. */
const chain = (...entries: (string | undefined)[]) => ({
  ...https,
  'x-forwarded-for': entries.filter((e) => e !== undefined).join(', '),
})

describe('TRUST_PROXY: the client address behind a proxy', () => {
  it('1 (one proxy): the entry the proxy appended, not the one the client wrote', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: String(limit), TRUST_PROXY: '1' }, 'warn')
    // nginx's $proxy_add_x_forwarded_for: the client's own header, then the client's address.
    await attack(s, (client, written) => chain(written, client))
    // HAProxy's `option forwardfor` adds a header line of its own, after the client's.
    // (Another account: each has its own limit of `limit` requests a minute.)
    const token = await restrictedTo(s, office, s.h.bob)
    const url = `/tokens/v2/${s.h.bob.username}?access_token=${token}`
    const lines = `GET ${url} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-Forwarded-Proto: https\r\n`
    const raw = (first: string, last: string) =>
      s.raw(`${lines}X-Forwarded-For: ${first}\r\nX-Forwarded-For: ${last}\r\n\r\n`, 1)
    expect(await raw(office, attacker)).toMatch(
      /^HTTP\/1\.1 401 .*\{"message":"Unauthorized","details":"the token may not be used from this address"\}$/s,
    )
    expect(await raw(attacker, office)).toMatch(/^HTTP\/1\.1 200 /)
  })

  it('2 (two proxies: a CDN, then a load balancer): the entry before their two', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: String(limit), TRUST_PROXY: '2' }, 'warn')
    // The CDN appends the client's address, the load balancer the CDN's (10.1.2.3).
    await attack(s, (client, written) => chain(written, client, '10.1.2.3'))
  })

  it("the proxies' address ranges: the last entry not written by one of them", async () => {
    const env = { RATE_LIMIT_PER_MINUTE: String(limit), TRUST_PROXY: 'loopback, 10.0.0.0/8' }
    const s = await serving(env, 'warn')
    // The load balancer (10.1.2.3) appends the client's address, the local proxy the LB's.
    await attack(s, (client, written) => chain(written, client, '10.1.2.3'))
    // Any number of trusted hops, and a client reaching the instance itself is its own address.
    const token = await restrictedTo(s, office, s.h.bob)
    const url = `/tokens/v2/${s.h.bob.username}?access_token=${token}`
    const from = async (peer: string, headers: Record<string, string>) => {
      const res = await s.app.inject({ method: 'GET', url, remoteAddress: peer, headers })
      return { status: res.statusCode, body: res.body }
    }
    expect(await from('127.0.0.1', chain(attacker, office, '10.9.9.9', '10.1.2.3'))).toMatchObject({
      status: 200,
    })
    expect(await from('198.51.100.5', chain(office))).toEqual(unauthorized)
    expect(await from(office, chain(attacker))).toMatchObject({ status: 200 })
  })

  it('off (0, unset): the connection is the client, whatever X-Forwarded-For says', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: String(limit) }, 'warn')
    const user = s.h.alice.username
    const create = JSON.stringify({ scopes: ['tokens:read'], note: 'direct' })
    // Over the socket the client is 127.0.0.1: the fast paths (retrieve, create) see it so.
    // Retrieve's limit per address first (a token refused below counts against it too).
    const junk = '/tokens/v2?access_token=not-a-token'
    for (let i = 0; i < limit; i++) {
      const rotated = { 'x-forwarded-for': `192.0.2.${i}` }
      expect(answer(await s.socket(junk, 'GET', rotated))).toEqual(malformed)
    }
    expect(answer(await s.socket(junk, 'GET', { 'x-forwarded-for': '192.0.2.99' }))).toEqual(
      tooMany,
    )
    const other = await s.app.inject({ method: 'GET', url: junk, remoteAddress: '198.51.100.2' })
    expect(answer({ status: other.statusCode, body: other.body })).toEqual(malformed)

    // A token restricted to the office's address: claiming it is nothing.
    const elsewhere = `/tokens/v2/${user}?access_token=${await restrictedTo(s, office)}`
    const claimed = { 'x-forwarded-for': office }
    expect(answer(await s.socket(elsewhere, 'GET', claimed))).toEqual(unauthorized)
    expect(answer(await s.socket(elsewhere, 'POST', claimed, create))).toEqual(unauthorized)
    const here = `/tokens/v2/${user}?access_token=${await restrictedTo(s, '127.0.0.1')}`
    const denied = { 'x-forwarded-for': '198.51.100.1' }
    expect((await s.socket(here, 'GET', denied)).status).toBe(200)
    s.fastify.length = 0
    expect((await s.socket(here, 'POST', denied, create)).status).toBe(200)
    // Answered ahead of Fastify (src/http/ahead/create.ts), from the connection's address.
    expect(s.fastify).toEqual([])
    const [event] = await s.h.ctx.audit.list({ limit: 1 })
    expect(event).toMatchObject({ action: 'token.created', address: '127.0.0.1' })

    const revoke = (headers: Record<string, string>) =>
      s.socket('/leaks/v1/revoke', 'POST', headers, '{"credentials":[]}')
    for (let i = 0; i < limit; i++) {
      expect(answer(await revoke({ 'x-forwarded-for': `192.0.2.${i}` }))).toEqual(accepted)
    }
    expect(answer(await revoke({ 'x-forwarded-for': '192.0.2.99' }))).toEqual(tooMany)

    const guesser = '198.51.100.99'
    for (let i = 0; i < 20; i++) {
      const page = await signIn(s, `user${i % 5}`, { 'x-forwarded-for': `192.0.2.${i}` }, guesser)
      expect(page.status).toBe(401)
    }
    expectThrottled(await signIn(s, 'user9', { 'x-forwarded-for': '192.0.2.200' }, guesser))
    expect((await signIn(s, 'user9', {}, '198.51.100.4')).status).toBe(401)
  })

  it('still refuses a request not forwarded as https with 403, in every proxy form', async () => {
    for (const TRUST_PROXY of ['1', 'true', '2', '10.0.0.0/8']) {
      const s = await serving({ TRUST_PROXY }, 'warn')
      const url = `/tokens/v2?access_token=${s.h.alice.defaultToken.token}`
      for (const headers of [{}, { 'x-forwarded-proto': 'http' }] as Record<string, string>[]) {
        expect(answer(await s.socket(url, 'GET', headers)), TRUST_PROXY).toEqual({
          status: 403,
          body: '{"message":"HTTPS is required"}',
        })
      }
      expect((await s.socket(url, 'GET', https)).status).toBe(200)
      await closeServing()
    }
  })
})

describe('TRUST_PROXY values', () => {
  const http = (TRUST_PROXY?: string) => {
    const { trustProxy, proxy } = toConfig(TRUST_PROXY === undefined ? {} : { TRUST_PROXY }).http
    return { trustProxy, proxy }
  }

  it("takes a hop count, true as one hop, or the proxies' addresses; 0, false or unset: none", () => {
    expect(http()).toEqual({ trustProxy: false, proxy: undefined })
    expect(http('0')).toEqual({ trustProxy: false, proxy: undefined })
    expect(http('false')).toEqual({ trustProxy: false, proxy: undefined })
    expect(http('1')).toEqual({ trustProxy: true, proxy: 1 })
    expect(http('true')).toEqual({ trustProxy: true, proxy: 1 })
    expect(http('2')).toEqual({ trustProxy: true, proxy: 2 })
    expect(http('16')).toEqual({ trustProxy: true, proxy: 16 })
    expect(http('10.0.0.5')).toEqual({ trustProxy: true, proxy: ['10.0.0.5'] })
    expect(http(' 10.0.0.0/8, loopback,,2001:db8::/32 ,uniquelocal,linklocal,::1')).toEqual({
      trustProxy: true,
      proxy: ['10.0.0.0/8', 'loopback', '2001:db8::/32', 'uniquelocal', 'linklocal', '::1'],
    })
  })

  it('stops start-up with one line on a value that is none of these', () => {
    const forms =
      'a number of proxies (0, 1, 2, ...) or their addresses (CIDR ranges, loopback, linklocal, uniquelocal)'
    const refused: [string, string][] = [
      ['maybe', `TRUST_PROXY must be ${forms}, got "maybe"`],
      ['yes', `TRUST_PROXY must be ${forms}, got "yes"`],
      ['TRUE', `TRUST_PROXY must be ${forms}, got "TRUE"`],
      ['-1', `TRUST_PROXY must be ${forms}, got "-1"`],
      ['1.5', `TRUST_PROXY must be ${forms}, got "1.5"`],
      [',', `TRUST_PROXY must be ${forms}, got ","`],
      ['10.0.0.0/0', `TRUST_PROXY must be ${forms}, got "10.0.0.0/0"`],
      ['::/0', `TRUST_PROXY must be ${forms}, got "::/0"`],
      ['10.0.0.0/33', `TRUST_PROXY must be ${forms}, got "10.0.0.0/33"`],
      ['10.0.0.0/255.0.0.0', `TRUST_PROXY must be ${forms}, got "10.0.0.0/255.0.0.0"`],
      ['17', 'TRUST_PROXY must be at most 16 proxies, got "17"'],
      [
        '10.0.0.0/8, proxy.internal',
        'TRUST_PROXY: not an address, a CIDR range or a range name: "proxy.internal"',
      ],
      [
        'loopback,2001:db8::/129',
        'TRUST_PROXY: not an address, a CIDR range or a range name: "2001:db8::/129"',
      ],
      [
        '10.0.0.1,10.0.0.0/8/8',
        'TRUST_PROXY: not an address, a CIDR range or a range name: "10.0.0.0/8/8"',
      ],
    ]
    for (const [value, line] of refused) {
      expect(() => http(value), value).toThrow(ConfigError)
      expect(() => http(value), value).toThrow(new ConfigError(line))
    }
  })
})
