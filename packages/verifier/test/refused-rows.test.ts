import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
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

/**
 * Each refused decision is sent as a row (for Tessera's verification log) with the report that
 * counts it: bounded per report, sent again the same with a batch sent again, and what the
 * request brought (address, Origin or Referer, X-Request-Id) with the time it took.
 */

let tessera: FakeTessera
let verifier: Verifier

const pk = tokenOf('pk', { u: 'acme', a: 'cpk' })
const restricted = tokenOf('pk', { u: 'acme', a: 'curl' })
const fenced = tokenOf('sk', { u: 'acme', a: 'cip' })
const revoked = tokenOf('pk', { u: 'globex', a: 'cgone' })
const forged = tokenOf('pk', { u: 'acme', a: 'cpk' }, 7)
const T = Date.parse('2026-11-27T10:05:30.000Z')
const at = '2026-11-27T10:05:30.000Z'
const later = '2026-11-27T10:05:30.003Z'

async function start(options: Partial<VerifierOptions> = {}) {
  verifier = createVerifier({ url: tessera.url, adminKey: fakeKey, onError: () => {}, ...options })
  await verifier.ready()
}

const until = (what: () => boolean) =>
  vi.waitFor(() => expect(what()).toBe(true), { timeout: 5000 })
const rowsOf = (reports: FakeTessera['reports']) => reports.flatMap((r) => r.refused ?? [])

beforeEach(async () => {
  tessera = await startFakeTessera()
  tessera.answers.set(pk, active({ username: 'acme', usage: 'pk', id: 'cpk', scope: 'a' }))
  tessera.answers.set(
    restricted,
    active({ username: 'acme', usage: 'pk', id: 'curl', scope: '', allowedUrls: ['example.com'] }),
  )
  tessera.answers.set(
    fenced,
    active({ username: 'acme', usage: 'sk', id: 'cip', scope: '', allowedIps: ['10.0.0.0/8'] }),
  )
  tessera.answers.set(forged, { active: false, code: 'TokenInvalid' })
})

afterEach(async () => {
  vi.useRealTimers()
  await verifier?.close()
  await tessera.stop()
})

describe('refused rows', () => {
  it('sends each refused decision as a row with the report; valid ones are only counted', async () => {
    await start({ reportEveryMs: 3_600_000 })
    vi.useFakeTimers({ toFake: ['Date', 'performance'] })
    vi.setSystemTime(T)
    await verifier.verify(pk)
    verifier.verifyCached(pk, { scope: 'a' })
    const request = { ip: '203.0.113.7', origin: 'https://App.Example.com:8443', requestId: 'r-42' }
    await verifier.verify(pk, { scope: 'b', ...request })
    // An address, a Referer and an id of shapes Tessera does not take are left out.
    await verifier.verify(restricted, {
      referer: 'https://user@evil.net/page?q=1',
      ip: 'fe80::1%eth0',
      requestId: 'not one',
    })
    await verifier.verify(fenced, { ip: '::ffff:192.168.1.1' })
    // Asked of Tessera: the 3 ms the answer took (on the verifier's clock) are its duration.
    tessera.delayMs = 20
    tessera.onIntrospect = () => vi.advanceTimersByTime(3)
    await verifier.verify(revoked)
    tessera.delayMs = 0
    verifier.verifyCached(revoked)
    await verifier.verify(forged)
    await verifier.verify('not-a-token', { origin: 'null', referer: 'http://shop.example/x' })
    await verifier.close()
    expect(tessera.counted).toHaveLength(1)
    const [report] = tessera.counted
    expect(report?.refused).toEqual([
      {
        at,
        account: 'acme',
        token: 'cpk',
        outcome: 'scope_missing',
        ip: '203.0.113.7',
        origin: 'app.example.com:8443',
        request_id: 'r-42',
        duration_us: 0,
      },
      {
        at,
        account: 'acme',
        token: 'curl',
        outcome: 'url_not_allowed',
        origin: 'evil.net',
        duration_us: 0,
      },
      {
        at,
        account: 'acme',
        token: 'cip',
        outcome: 'ip_not_allowed',
        ip: '::ffff:192.168.1.1',
        duration_us: 0,
      },
      { at: later, account: 'globex', token: 'cgone', outcome: 'revoked', duration_us: 3000 },
      { at: later, account: 'globex', token: 'cgone', outcome: 'revoked', duration_us: 0 },
      { at: later, account: '', token: '', outcome: 'invalid', duration_us: 0 },
      {
        at: later,
        account: '',
        token: '',
        outcome: 'malformed',
        origin: 'shop.example',
        duration_us: 0,
      },
    ])
    const valid = report?.counts.find((c) => c.token === 'cpk')?.outcomes
    expect(valid).toEqual({ valid: 2, scope_missing: 1 })
    expect(verifier.stats().refusedDropped).toBe(0)
  })

  it('sends no refused field when every decision was valid', async () => {
    await start({ reportEveryMs: 3_600_000 })
    await verifier.verify(pk)
    verifier.verifyCached(pk)
    await verifier.close()
    expect(tessera.counted).toHaveLength(1)
    expect(tessera.counted[0]).not.toHaveProperty('refused')
  })

  it('keeps at most maxRefusedRows rows a report, counting the rest and the rows dropped', async () => {
    await start({ reportEveryMs: 100, maxRefusedRows: 2 })
    await verifier.verify(revoked)
    for (let i = 0; i < 4; i++) verifier.verifyCached(revoked)
    expect(verifier.stats().refusedDropped).toBe(3)
    await until(() => tessera.counted.length === 1)
    for (let i = 0; i < 5; i++) verifier.verifyCached(revoked)
    await until(() => tessera.counted.length === 2)
    expect(tessera.counted.map((r) => r.refused?.length)).toEqual([2, 2])
    expect(tessera.counted.map((r) => r.counts[0]?.outcomes)).toEqual([
      { revoked: 5 },
      { revoked: 5 },
    ])
    expect(verifier.stats().refusedDropped).toBe(6)
  })

  it('splits more than 1,000 rows across batches, as Tessera takes them', async () => {
    await start({ reportEveryMs: 3_600_000, maxRefusedRows: 2_500 })
    await verifier.verify(revoked)
    for (let i = 1; i < 2_500; i++) verifier.verifyCached(revoked)
    await verifier.close()
    const batches = tessera.counted.map((r) => [
      r.batch.split(':')[1],
      r.counts.length,
      r.refused?.length,
    ])
    expect(batches).toEqual([
      ['1', 1, 1000],
      ['2', 0, 1000],
      ['3', 0, 500],
    ])
    expect(verifier.stats().refusedDropped).toBe(0)
  })

  it('sends none with maxRefusedRows 0 or reportEveryMs 0, and refuses a bad bound', async () => {
    await start({ reportEveryMs: 3_600_000, maxRefusedRows: 0 })
    await verifier.verify(revoked)
    await verifier.close()
    expect(tessera.counted.map((r) => [r.counts[0]?.outcomes, r.refused])).toEqual([
      [{ revoked: 1 }, undefined],
    ])
    expect(verifier.stats().refusedDropped).toBe(0)
    await start({ reportEveryMs: 0 })
    await verifier.verify(revoked)
    await verifier.close()
    expect(tessera.reports).toHaveLength(1)
    expect(() =>
      createVerifier({ url: tessera.url, adminKey: fakeKey, maxRefusedRows: 1.5 }),
    ).toThrow('maxRefusedRows must be a whole number, 0 or more')
  })

  it('sends the same rows again with a batch whose answer was lost', async () => {
    await start({ reportEveryMs: 100 })
    tessera.loseReportAnswers = 1
    await verifier.verify(revoked, { requestId: 'once' })
    await until(() => tessera.reports.length === 2)
    const [first, again] = tessera.reports
    expect(again).toEqual(first)
    expect(first?.refused).toEqual([expect.objectContaining({ request_id: 'once' })])
    expect(tessera.counted.map((r) => r.batch)).toEqual([first?.batch])
  })

  it('sends the counts again without the rows to a Tessera that refuses them', async () => {
    const errors: Error[] = []
    await start({ reportEveryMs: 3_600_000, maxRefusedRows: 1_500, onError: (e) => errors.push(e) })
    tessera.refuseRows = true
    await verifier.verify(revoked)
    for (let i = 1; i < 1_200; i++) verifier.verifyCached(revoked)
    await verifier.close()
    // Batch 1 (counts, 1,000 rows) again without its rows; batch 2 (200 rows, nothing else) dropped.
    expect(tessera.reports.map((r) => [r.batch.split(':')[1], r.refused?.length])).toEqual([
      ['1', 1000],
      ['1', undefined],
      ['2', 200],
    ])
    expect(tessera.counted.map((r) => r.counts[0]?.outcomes)).toEqual([{ revoked: 1_200 }])
    expect(verifier.stats()).toMatchObject({ refusedDropped: 1_200, pendingBatches: 0 })
    expect(errors[0]?.message).toMatch(/422/)
  })

  it('keeps at most maxPendingRows rows waiting for Tessera, dropping the oldest', async () => {
    await start({ reportEveryMs: 100, maxPendingRows: 3 })
    await verifier.verify(revoked)
    await until(() => tessera.counted.length === 1)
    await tessera.stop()
    const twice = (round: number) => {
      for (let i = 0; i < 2; i++) verifier.verifyCached(revoked, { requestId: `r${round}-${i}` })
    }
    twice(1)
    await until(() => verifier.stats().failedReports >= 1)
    twice(2)
    await until(() => verifier.stats().refusedDropped === 1)
    await tessera.restart()
    await until(() => verifier.stats().pendingBatches === 0)
    const ids = rowsOf(tessera.counted.slice(1)).map((r) => r.request_id)
    expect(ids).toHaveLength(3)
    // The oldest went, unless its batch was on its way then (never trimmed): the newest did.
    expect([
      ['r1-1', 'r2-0', 'r2-1'],
      ['r1-0', 'r1-1', 'r2-1'],
    ]).toContainEqual(ids)
  })
})

describe('what the plugin and the middleware bring to a row', () => {
  it('Fastify: request.ip, Origin and X-Request-Id', async () => {
    await start({ reportEveryMs: 3_600_000 })
    const app = Fastify()
    await app.register(verifierPlugin, { verifier })
    app.get('/', async () => ({ ok: true }))
    const res = await app.inject({
      url: '/',
      remoteAddress: '198.51.100.7',
      headers: {
        authorization: `Bearer ${revoked}`,
        origin: 'https://shop.example',
        'x-request-id': 'abc-1',
      },
    })
    expect(res.statusCode).toBe(401)
    await app.close()
    await verifier.close()
    expect(rowsOf(tessera.counted)).toEqual([
      {
        at: expect.any(String),
        account: 'globex',
        token: 'cgone',
        outcome: 'revoked',
        ip: '198.51.100.7',
        origin: 'shop.example',
        request_id: 'abc-1',
        duration_us: expect.any(Number),
      },
    ])
  })

  it('node:http: the socket address, Referer and X-Request-Id', async () => {
    await start({ reportEveryMs: 3_600_000 })
    const check = verifierMiddleware({ verifier })
    const server = createServer((req, res) => check(req, res, () => res.end('ok')))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const res = await fetch(`http://127.0.0.1:${port}/?access_token=${revoked}`, {
      headers: { referer: 'https://shop.example:8443/cart', 'x-request-id': 'req:7' },
    })
    expect(res.status).toBe(401)
    await new Promise((resolve) => server.close(resolve))
    await verifier.close()
    const [row] = rowsOf(tessera.counted)
    expect(row).toMatchObject({ ip: '127.0.0.1', origin: 'shop.example:8443', request_id: 'req:7' })
    expect(Number.isInteger(row?.duration_us)).toBe(true)
  })
})
