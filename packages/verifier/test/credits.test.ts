import Fastify from 'fastify'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { verifierPlugin } from '../src/fastify.js'
import {
  createVerifier,
  type Verifier,
  type VerifierOptions,
  verifierMiddleware,
} from '../src/index.js'
import { active, type FakeTessera, fakeKey, startFakeTessera, tokenOf } from './fake-tessera.js'

/** Credits spent from leases: asked for as they run low, refused when Tessera grants nothing. */

let tessera: FakeTessera
let verifier: Verifier

const metered = tokenOf('pk', { u: 'acme', a: 'cpk' })
const shared = tokenOf('sk', { u: 'acme', a: 'csk' })
const free = tokenOf('pk', { u: 'globex', a: 'cgx' })
const exhausted = { valid: false, reason: 'CreditsExhausted' }

async function start(options: Partial<VerifierOptions> = {}) {
  verifier = createVerifier({ url: tessera.url, adminKey: fakeKey, onError: () => {}, ...options })
  await verifier.ready()
}

const until = (what: () => boolean) =>
  vi.waitFor(() => expect(what()).toBe(true), { timeout: 5000 })

/** Verifies `n` times one after another; answers how many were valid. */
async function spend(token: string, n: number, cost = 1) {
  let valid = 0
  for (let i = 0; i < n; i++) if ((await verifier.verify(token, { cost })).valid) valid++
  return valid
}

beforeEach(async () => {
  tessera = await startFakeTessera()
  tessera.answers.set(
    metered,
    active({ username: 'acme', usage: 'pk', id: 'cpk', scope: 's', credits: { token: 25 } }),
  )
  tessera.answers.set(
    shared,
    active({ username: 'acme', usage: 'sk', id: 'csk', scope: 's', credits: { account: 7 } }),
  )
  tessera.answers.set(free, active({ username: 'globex', usage: 'pk', id: 'cgx', scope: 's' }))
})

afterEach(async () => {
  await verifier?.close()
  await tessera.stop()
})

describe('credits', () => {
  it('spends exactly the balance from leases, then refuses with CreditsExhausted', async () => {
    await start()
    tessera.balances.set('acme/cpk', 25)
    expect(verifier.verifyCached(metered)).toBeUndefined()
    expect(await spend(metered, 30)).toBe(25)
    expect(tessera.introspectBodies).toEqual([{ token: metered, cost: 0, count: false }])
    expect(tessera.leaseRequests[0]).toEqual({ account: 'acme', token: 'cpk', want: 10 })
    expect(tessera.balances.get('acme/cpk')).toBe(0)
    // Known empty: refused from the cache, without asking.
    const asked = tessera.leaseRequests.length
    expect(verifier.verifyCached(metered)).toEqual(exhausted)
    expect(tessera.leaseRequests).toHaveLength(asked)
    // cost 0 checks without spending.
    expect((await verifier.verify(metered, { cost: 0 })).valid).toBe(true)
    await verifier.close()
    const counts = tessera.counted.flatMap((r) => r.counts)
    expect(counts).toEqual([
      expect.objectContaining({
        account: 'acme',
        token: 'cpk',
        outcomes: { valid: 26, credits_exhausted: 6 },
      }),
    ])
  })

  it('answers from a lease without a round trip, and asks for more in the background', async () => {
    await start()
    tessera.balances.set('acme/cpk', 1000)
    expect((await verifier.verify(metered))?.valid).toBe(true)
    expect(verifier.stats().creditsHeld).toBe(9)
    for (let i = 0; i < 4; i++) expect(verifier.verifyCached(metered)?.valid).toBe(true)
    expect(tessera.leaseRequests).toHaveLength(1)
    // Below half of what it asks for: the next lease (twice as big) comes in the background.
    expect(verifier.verifyCached(metered)?.valid).toBe(true)
    await until(() => verifier.stats().creditsHeld === 24)
    expect(tessera.leaseRequests.map((r) => r.want)).toEqual([10, 20])
    expect(tessera.balances.get('acme/cpk')).toBe(970)
  })

  it('spends a cost of several credits, and refuses it when fewer are left', async () => {
    await start()
    tessera.balances.set('acme/cpk', 10)
    expect(await spend(metered, 4, 3)).toBe(3)
    expect(await spend(metered, 1, 1)).toBe(1)
    expect(tessera.balances.get('acme/cpk')).toBe(0)
    await expect(verifier.verify(metered, { cost: 1.5 })).rejects.toThrow(/cost must be a whole/)
    expect(() => verifier.verifyCached(metered, { cost: -1 })).toThrow(/cost must be a whole/)
  })

  it('throws for a bad cost whatever the token: unmetered, not cached, malformed', async () => {
    await start()
    expect((await verifier.verify(free)).valid).toBe(true)
    expect(() => verifier.verifyCached(free, { cost: -1 })).toThrow(/cost must be a whole/)
    await expect(verifier.verify(free, { cost: 1.5 })).rejects.toThrow(/cost must be a whole/)
    const unknown = tokenOf('pk', { u: 'globex', a: 'cnew' })
    await expect(verifier.verify(unknown, { cost: Number.NaN })).rejects.toThrow(/not NaN/)
    await expect(verifier.verify('garbage', { cost: -2 })).rejects.toThrow(/not -2/)
    expect(tessera.introspections).toEqual([free])
  })

  it('checks the plugin and middleware cost at setup, not when a metered token comes', async () => {
    await start()
    expect(() => verifierMiddleware({ verifier, cost: 2.5 })).toThrow(/not 2.5/)
    expect(() => verifierMiddleware({ verifier, cost: -1 })).toThrow(/not -1/)
    expect(typeof verifierMiddleware({ verifier, cost: 0 })).toBe('function')
    const bad = Fastify()
    await expect(bad.register(verifierPlugin, { verifier, cost: -3 })).rejects.toThrow(/not -3/)
    await bad.close()
    const app = Fastify()
    await app.register(verifierPlugin, { verifier })
    expect(() =>
      app.get('/x', { config: { tessera: { cost: 0.5 } } }, async () => ({ ok: true })),
    ).toThrow(/not 0.5/)
    await app.close()
  })

  it('leases an account balance for a token that has none of its own', async () => {
    await start()
    tessera.balances.set('acme/csk', 7)
    expect(await spend(shared, 10)).toBe(7)
    expect(tessera.leaseRequests[0]).toEqual({ account: 'acme', token: 'csk', want: 10 })
  })

  it('spends nothing for a token without credits', async () => {
    await start()
    expect(await spend(free, 3)).toBe(3)
    expect(tessera.leaseRequests).toEqual([])
  })

  it('hands back unspent leases at close, and when they end', async () => {
    await start({ reportEveryMs: 60_000 })
    tessera.balances.set('acme/cpk', 100)
    tessera.leaseMs = 300
    await spend(metered, 3)
    expect(verifier.stats().creditsHeld).toBe(7)
    await until(() => tessera.balances.get('acme/cpk') === 97)
    expect(tessera.counted[0]?.returned).toEqual([
      { account: 'acme', token: 'cpk', amount: 7, lease: 'lease-1' },
    ])
    expect(verifier.stats().creditsHeld).toBe(0)
    tessera.leaseMs = 60_000
    await spend(metered, 2)
    await verifier.close()
    expect(tessera.balances.get('acme/cpk')).toBe(95)
  })

  it('asks again once credits.changed says the balance changed', async () => {
    await start()
    tessera.balances.set('acme/cpk', 2)
    expect(await spend(metered, 3)).toBe(2)
    expect(verifier.verifyCached(metered)).toEqual(exhausted)
    tessera.balances.set('acme/cpk', 5)
    await verifier.verify(shared, { cost: 0 })
    tessera.creditsChanged('acme', 'cpk')
    await until(() => verifier.verifyCached(metered) === undefined)
    // A token's change drops that token's answer alone.
    expect(verifier.verifyCached(shared, { cost: 0 })?.valid).toBe(true)
    expect(await spend(metered, 6)).toBe(5)
    expect(tessera.introspections).toEqual([metered, shared, metered])
    // An account's change drops every answer of the account.
    tessera.creditsChanged('acme')
    await until(() => verifier.verifyCached(shared, { cost: 0 }) === undefined)
    expect(verifier.verifyCached(metered, { cost: 0 })).toBeUndefined()
  })

  it('hands back the leases credits.changed names: a set ends their period', async () => {
    await start()
    tessera.balances.set('acme/cpk', 100)
    tessera.balances.set('acme/csk', 50)
    await spend(metered, 1)
    await spend(shared, 2)
    expect(verifier.stats().creditsHeld).toBe(9 + 8)
    tessera.creditsChanged('acme', 'cpk')
    await until(() => tessera.balances.get('acme/cpk') === 99)
    expect(verifier.stats().creditsHeld).toBe(8)
    expect(tessera.balances.get('acme/csk')).toBe(40)
    tessera.creditsChanged('acme')
    await until(() => tessera.balances.get('acme/csk') === 48)
    expect(verifier.stats().creditsHeld).toBe(0)
  })

  it('fails closed when Tessera cannot grant a lease', async () => {
    await start({ failFastMs: 0 })
    tessera.balances.set('acme/cpk', 10)
    await verifier.verify(metered, { cost: 0 })
    await tessera.stop()
    expect(await verifier.verify(metered)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
  })

  it('answers 429 from the Fastify plugin, with a route cost', async () => {
    await start()
    tessera.balances.set('acme/cpk', 5)
    const app = Fastify()
    await app.register(verifierPlugin, { verifier })
    app.get('/styles', { config: { tessera: { cost: 2 } } }, async () => ({ ok: true }))
    const get = () =>
      app.inject({ url: '/styles', headers: { authorization: `Bearer ${metered}` } })
    expect((await get()).statusCode).toBe(200)
    expect((await get()).statusCode).toBe(200)
    const refused = await get()
    expect(refused.statusCode).toBe(429)
    expect(refused.json()).toEqual({
      message: 'Too Many Requests',
      details: 'the access token has no credits left',
    })
    await app.close()
  })
})
