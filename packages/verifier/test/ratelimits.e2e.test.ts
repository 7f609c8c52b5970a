import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { buildApp } from '../../../src/app.js'
import { cliActor } from '../../../src/audit/events.js'
import type { NamedLimit } from '../../../src/ratelimit/named.js'
import { call, type Harness, harness } from '../../../test/helpers.js'
import { admin, adminEnv, secrets } from '../../../test/http/admin-client.js'
import { createVerifier, type Verifier } from '../src/index.js'

/**
 * The verifier applies a token's rate limits in process, from blocks Tessera takes off the same
 * count as its own verifications (`POST /admin/v1/ratelimit-leases`): never more passes than a
 * limit allows, across every verifier and Tessera; once Tessera says nothing is left, refusals
 * come from the process, without a round trip.
 */

let h: Harness
let app: FastifyInstance
/** The admin requests that reached Tessera, as `METHOD path`. */
let asked: string[]
let url: string
const verifiers: Verifier[] = []

beforeEach(async () => {
  h = await harness(adminEnv)
  // Tessera's clock stands still a second into the current minute: the verifier's reports name
  // the real minute, and no window ends during a test.
  h.clock.now = Date.now() - (Date.now() % 60_000) + 1_000
  app = buildApp(h.ctx)
  asked = []
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.url.startsWith('/admin/v1/') && request.url !== '/admin/v1/events') {
      asked.push(`${request.method} ${request.url}`)
    }
    done()
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
})

afterEach(async () => {
  await Promise.all(verifiers.splice(0).map((v) => v.close()))
  await app.close()
  await h.close()
})

async function start() {
  const verifier = createVerifier({ url, adminKey: secrets.k1, onError: () => {} })
  verifiers.push(verifier)
  await verifier.ready()
  return verifier
}

async function limited(limits: NamedLimit[]) {
  const account = await h.ctx.accounts.find('alice')
  if (account === undefined) throw new Error('no alice')
  const view = await h.ctx.tokens.create(
    account,
    h.ctx.accounts.holder(account),
    { scopes: ['styles:read'], ratelimits: limits },
    cliActor,
  )
  return view as typeof view & { token: string }
}

const retrieve = async (token: string) =>
  (await call(app, 'GET', `/tokens/v2?access_token=${encodeURIComponent(token)}`)).status

const perMinute = (limit: number): NamedLimit => ({ name: 'minute', limit, duration: 60_000 })
const refused = { valid: false, reason: 'RateLimited', ratelimit: 'minute' }
const range = () => ({ from: h.clock.now - 3_600_000, to: h.clock.now + 3_600_000 })

describe('rate limits in @tessera/verifier', () => {
  it('passes exactly the limit, refuses the next in process, and shares the count with Tessera', async () => {
    const pk = await limited([perMinute(5)])
    const verifier = await start()
    const passed = []
    for (let i = 0; i < 5; i++) passed.push((await verifier.verify(pk.token)).valid)
    expect(passed).toEqual([true, true, true, true, true])
    expect(asked).toEqual(['POST /admin/v1/introspect', 'POST /admin/v1/ratelimit-leases'])
    // Tessera said nothing is left of `minute`: the 6th is refused here, with no round trip.
    expect(verifier.verifyCached(pk.token)).toEqual(refused)
    expect(await verifier.verify(pk.token)).toEqual(refused)
    expect(asked).toHaveLength(2)
    // One count: Tessera's own verification of the same token is refused too.
    expect(await retrieve(pk.token)).toBe(429)

    await verifier.close()
    await h.ctx.usage.flush()
    const [row] = await h.ctx.usage.byToken('alice', range())
    expect(row).toMatchObject({ token: pk.id, outcomes: { valid: 5, rate_limited: 3 } })
  })

  it("reports its refusals by the limit's name", async () => {
    const pk = await limited([perMinute(1)])
    const verifier = await start()
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    expect(await verifier.verify(pk.token)).toEqual(refused)
    expect(verifier.verifyCached(pk.token)).toEqual(refused)
    await verifier.close()
    const reports = await h.ctx.usage.byToken('alice', range())
    expect(reports).toEqual([
      { token: pk.id, outcomes: { valid: 1, rate_limited: 2 }, rate_limited_by: { minute: 2 } },
    ])
  })

  it("sends its refusals to Tessera's verification log, with the limit's name", async () => {
    const pk = await limited([perMinute(1)])
    const verifier = await start()
    const request = { ip: '203.0.113.7', origin: 'https://app.example.com', requestId: 'req-1' }
    expect((await verifier.verify(pk.token, request)).valid).toBe(true)
    expect(await verifier.verify(pk.token, request)).toEqual(refused)
    expect(verifier.verifyCached(pk.token, { scope: 'tokens:write' })).toEqual({
      valid: false,
      reason: 'MissingScope',
    })
    await verifier.close()
    await h.ctx.verifications.log.flush()
    const rows = await h.ctx.verifications.list({ account: 'alice', ...range(), limit: 10 })
    const row = {
      account: 'alice',
      tokenId: pk.id,
      source: 'verifier',
      durationUs: expect.any(Number),
    }
    expect(
      rows.map(({ at, id, ...r }) => r).sort((a, b) => a.outcome.localeCompare(b.outcome)),
    ).toEqual([
      {
        ...row,
        outcome: 'rate_limited',
        limit: 'minute',
        ip: '203.0.113.7',
        origin: 'app.example.com',
        requestId: 'req-1',
      },
      { ...row, outcome: 'scope_missing', limit: null, ip: null, origin: null, requestId: null },
    ])
  })

  it('never passes more than the limit across two verifiers and Tessera, whatever the order', async () => {
    const pk = await limited([perMinute(12)])
    const one = await start()
    const two = await start()
    let passes = 0
    for (let i = 0; i < 10; i++) {
      if ((await one.verify(pk.token)).valid) passes++
      if ((await two.verify(pk.token)).valid) passes++
      if ((await retrieve(pk.token)) === 200) passes++
    }
    // The first verifier's block held 10, the second's 2 (all that was left), Tessera's none:
    // refused early, never late.
    expect(passes).toBe(12)
    expect(
      (await admin(app, 'POST', '/ratelimit-leases', { token: pk.token, want: 1 })).body,
    ).toMatchObject({ granted: 0, ratelimit: 'minute' })
  })

  it("applies its account's limits to every token, a tk's too, and asks nothing of a token without", async () => {
    const put = await admin(app, 'PUT', '/accounts/alice/ratelimits', {
      limits: [{ name: 'daily', limit: 4, duration: 86_400_000 }],
    })
    expect(put.status).toBe(200)
    const sk = await h.token('alice', ['tokens:read', 'tokens:write', 'styles:read'])
    // Its creation is one use of the sk: 3 are left of the day.
    const tk = (
      await call(app, 'POST', '/tokens/v2/alice', sk.token, {
        expires: new Date(h.clock.now + 600_000).toISOString(),
        scopes: ['styles:read'],
      })
    ).body.token as string
    const verifier = await start()
    const daily = { valid: false, reason: 'RateLimited', ratelimit: 'daily' }
    // The tk's block (its account's tks share one) takes the 3 left.
    for (let i = 0; i < 3; i++) expect((await verifier.verify(tk)).valid).toBe(true)
    expect(await verifier.verify(tk)).toEqual(daily)
    // The sk shares the account's count: nothing is granted to it.
    expect(await verifier.verify(sk.token)).toEqual(daily)
    expect(await retrieve(sk.token)).toBe(429)

    const bob = h.bob.defaultToken.token as string
    asked = []
    for (let i = 0; i < 3; i++) expect((await verifier.verify(bob)).valid).toBe(true)
    expect(asked).toEqual(['POST /admin/v1/introspect'])
  })

  it('takes nothing of the limits for a verification refused for credits', async () => {
    const pk = await limited([perMinute(3)])
    await h.ctx.credits.set({ account: 'alice', tokenId: pk.id }, { remaining: 1 })
    const verifier = await start()
    const exhausted = { valid: false, reason: 'CreditsExhausted' }
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    expect(await verifier.verify(pk.token)).toEqual(exhausted)
    expect(await verifier.verify(pk.token)).toEqual(exhausted)
    await h.ctx.credits.adjust({ account: 'alice', tokenId: pk.id }, 10, cliActor)
    // Once credits.changed has reached the verifier, the limit still has its 2.
    await vi.waitFor(async () => expect((await verifier.verify(pk.token)).valid).toBe(true), {
      timeout: 5_000,
    })
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    expect(await verifier.verify(pk.token)).toEqual(refused)
  })

  it("asks again once a block's window has ended", async () => {
    const pk = await limited([{ name: 'burst', limit: 2, duration: 1_000 }])
    const verifier = await start()
    const burst = { valid: false, reason: 'RateLimited', ratelimit: 'burst' }
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    expect(verifier.verifyCached(pk.token)).toEqual(burst)
    // The next second, on both clocks.
    h.clock.now += 1_000
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect(verifier.verifyCached(pk.token)).toBeUndefined()
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    expect(await verifier.verify(pk.token)).toEqual(burst)
  })

  it('passes at most what its block holds while Tessera cannot be reached', async () => {
    const pk = await limited([perMinute(20)])
    const verifier = await start()
    expect((await verifier.verify(pk.token)).valid).toBe(true)
    await app.close()
    let passes = 1
    for (let i = 0; i < 15; i++) if ((await verifier.verify(pk.token)).valid) passes++
    // The first block was 10: the rest would need Tessera.
    expect(passes).toBe(10)
    expect(await verifier.verify(pk.token)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
  })
})
