import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createVerifier, type Verifier, type VerifierOptions } from '../src/index.js'
import { active, type FakeTessera, fakeKey, startFakeTessera, tokenOf } from './fake-tessera.js'

/** A lease's end on the verifier's own clock, leases at close, and returns Tessera refuses. */

let tessera: FakeTessera
let verifier: Verifier
let errors: string[]

const metered = tokenOf('pk', { u: 'acme', a: 'cpk' })
const free = tokenOf('pk', { u: 'globex', a: 'cgx' })

async function start(options: Partial<VerifierOptions> = {}) {
  verifier = createVerifier({
    url: tessera.url,
    adminKey: fakeKey,
    onError: (err) => errors.push(err.message),
    ...options,
  })
  await verifier.ready()
}

const until = (what: () => boolean) =>
  vi.waitFor(() => expect(what()).toBe(true), { timeout: 5000 })

async function spend(n: number) {
  let valid = 0
  for (let i = 0; i < n; i++) if ((await verifier.verify(metered)).valid) valid++
  return valid
}

beforeEach(async () => {
  errors = []
  tessera = await startFakeTessera()
  tessera.answers.set(
    metered,
    active({ username: 'acme', usage: 'pk', id: 'cpk', scope: 's', credits: { token: 100 } }),
  )
  tessera.balances.set('acme/cpk', 100)
})

afterEach(async () => {
  await verifier?.close()
  await tessera.stop()
})

describe("a lease's end", () => {
  it('spends a lease whose expires is past on a verifier clock 2 minutes ahead', async () => {
    await start({ reportEveryMs: 60_000 })
    tessera.clockSkewMs = -120_000
    expect(await spend(5)).toBe(5)
    expect(tessera.leaseRequests).toHaveLength(1)
    expect(verifier.stats().creditsHeld).toBe(5)
    await new Promise((r) => setTimeout(r, 1200))
    // Not handed back as over: still held, nothing returned.
    expect(verifier.stats().creditsHeld).toBe(5)
    expect(tessera.counted).toEqual([])
    expect(tessera.balances.get('acme/cpk')).toBe(90)
  })

  it('ends a lease ttlMs after it was asked on a verifier clock 2 minutes behind', async () => {
    await start({ reportEveryMs: 60_000 })
    tessera.clockSkewMs = 120_000
    tessera.leaseMs = 300
    expect(await spend(3)).toBe(3)
    await until(() => tessera.balances.get('acme/cpk') === 97)
    expect(tessera.counted[0]?.returned).toEqual([
      { account: 'acme', token: 'cpk', amount: 7, lease: 'lease-1' },
    ])
    expect(verifier.stats().creditsHeld).toBe(0)
  })
})

describe('closing', () => {
  it('asks no lease once close() began, for a verify() already on its way', async () => {
    await start()
    tessera.answers.set(free, active({ username: 'globex', usage: 'pk', id: 'cgx', scope: 's' }))
    await verifier.verify(free)
    // The final report takes a while: a lease asked meanwhile would never be handed back.
    tessera.reportDelayMs = 300
    tessera.delayMs = 100
    let closing: Promise<void> | undefined
    tessera.onIntrospect = () => {
      closing = verifier.close()
    }
    const answer = await verifier.verify(metered)
    await closing
    expect(answer).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    expect(tessera.leaseRequests).toEqual([])
    expect(tessera.balances.get('acme/cpk')).toBe(100)
    expect(tessera.counted.flatMap((r) => r.counts.map((c) => c.token))).toEqual(['cgx'])
  })

  it('refuses a verify() waiting for a lease when close() comes; the lease goes back whole', async () => {
    await start()
    tessera.leaseDelayMs = 200
    const answer = verifier.verify(metered)
    await until(() => tessera.leaseRequests.length === 1)
    await verifier.close()
    expect(await answer).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    expect(tessera.leaseRequests).toHaveLength(1)
    expect(tessera.counted.flatMap((r) => r.returned)).toEqual([
      { account: 'acme', token: 'cpk', amount: 10, lease: 'lease-1' },
    ])
    expect(tessera.balances.get('acme/cpk')).toBe(100)
  })
})

describe('returns Tessera refuses', () => {
  it('sends the returned leases of a refused batch again alone, once', async () => {
    await start({ reportEveryMs: 60_000 })
    expect(await spend(2)).toBe(2)
    tessera.refuseReports = 1
    await verifier.close()
    const [refused, again] = tessera.reports
    expect(tessera.reports).toHaveLength(2)
    expect(refused?.counts).toHaveLength(1)
    expect(again?.counts).toEqual([])
    expect(again?.returned).toEqual([
      { account: 'acme', token: 'cpk', amount: 8, lease: 'lease-1' },
    ])
    expect(again?.batch).not.toBe(refused?.batch)
    expect(tessera.balances.get('acme/cpk')).toBe(98)
    expect(errors).toEqual(['/admin/v1/usage/reports answered 422'])
  })

  it('drops them, said through onError, when Tessera refuses them too', async () => {
    await start({ reportEveryMs: 60_000 })
    expect(await spend(2)).toBe(2)
    tessera.refuseReports = 2
    await verifier.close()
    expect(tessera.reports).toHaveLength(2)
    expect(tessera.counted).toEqual([])
    expect(tessera.balances.get('acme/cpk')).toBe(90)
    expect(errors).toEqual([
      '/admin/v1/usage/reports answered 422',
      '1 returned leases (8 credits) were dropped',
    ])
  })
})
