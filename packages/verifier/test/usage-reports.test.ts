import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createVerifier, type Verifier, type VerifierOptions } from '../src/index.js'
import { active, type FakeTessera, fakeKey, startFakeTessera, tokenOf } from './fake-tessera.js'

/** Counting every decision by outcome, and reporting the counts to Tessera in batches. */

let tessera: FakeTessera
let verifier: Verifier

const pk = tokenOf('pk', { u: 'acme', a: 'cpk' })
const restricted = tokenOf('pk', { u: 'acme', a: 'curl' })
const fenced = tokenOf('sk', { u: 'acme', a: 'cip' })
const revoked = tokenOf('pk', { u: 'globex', a: 'cgone' })
const forged = tokenOf('pk', { u: 'acme', a: 'cpk' }, 7)
const T = Date.parse('2026-11-27T10:05:30.000Z')
const minute = '2026-11-27T10:05:00.000Z'

async function start(options: Partial<VerifierOptions> = {}) {
  verifier = createVerifier({ url: tessera.url, adminKey: fakeKey, onError: () => {}, ...options })
  await verifier.ready()
}

const until = (what: () => boolean) =>
  vi.waitFor(() => expect(what()).toBe(true), { timeout: 5000 })

beforeEach(async () => {
  tessera = await startFakeTessera()
  tessera.answers.set(
    pk,
    active({ username: 'acme', usage: 'pk', id: 'cpk', scope: 'styles:read' }),
  )
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

describe('counting', () => {
  it('counts each decision once per account, token and minute, by outcome', async () => {
    await start({ reportEveryMs: 3_600_000 })
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(T)
    const exp = Math.floor(T / 1000) - 10
    const expired = tokenOf('tk', { u: 'acme', exp, iat: exp - 60, scopes: [] })
    tessera.answers.set(expired, { active: false, code: 'TokenExpired' })
    // valid x3 (one asked, two cached), scope_missing x1
    await verifier.verify(pk, { scope: 'styles:read' })
    verifier.verifyCached(pk)
    await verifier.verify(pk)
    await verifier.verify(pk, { scope: 'tokens:write' })
    await verifier.verify(restricted, { origin: 'https://evil.net' })
    await verifier.verify(restricted, { origin: 'https://example.com' })
    await verifier.verify(fenced, { ip: '192.168.1.1' })
    await verifier.verify(revoked)
    verifier.verifyCached(revoked)
    await verifier.verify(expired)
    await verifier.verify(forged)
    await verifier.verify('not-a-token')
    await verifier.verify('pk.x.y.z')
    expect(verifier.stats()).toMatchObject({ pendingRows: 6, pendingBatches: 0 })
    await verifier.close()
    expect(tessera.counted).toHaveLength(1)
    const [report] = tessera.counted
    expect(report?.batch).toMatch(/^[A-Za-z0-9_-]{8}:1$/)
    expect(report?.returned).toEqual([])
    const rows = (report?.counts ?? []).map(({ account, token, outcomes, minute: m }) => ({
      at: `${account}/${token}@${m}`,
      outcomes,
    }))
    expect(rows.sort((a, b) => a.at.localeCompare(b.at))).toEqual([
      { at: `/@${minute}`, outcomes: { malformed: 2, invalid: 1 } },
      { at: `acme/@${minute}`, outcomes: { expired: 1 } },
      { at: `acme/cip@${minute}`, outcomes: { ip_not_allowed: 1 } },
      { at: `acme/cpk@${minute}`, outcomes: { valid: 3, scope_missing: 1 } },
      { at: `acme/curl@${minute}`, outcomes: { valid: 1, url_not_allowed: 1 } },
      { at: `globex/cgone@${minute}`, outcomes: { revoked: 2 } },
    ])
  })

  it("counts a refusal Tessera answers unowned (a former account's string) against nobody", async () => {
    await start({ reportEveryMs: 3_600_000 })
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(T)
    const exp = Math.floor(T / 1000) - 10
    const formerTk = tokenOf('tk', { u: 'acme', exp, iat: exp - 60, scopes: [] })
    const formerPk = tokenOf('pk', { u: 'acme', a: 'cold' })
    tessera.answers.set(formerTk, { active: false, code: 'TokenExpired', unowned: true })
    tessera.answers.set(formerPk, { active: false, code: 'TokenRevoked', unowned: true })
    await verifier.verify(formerTk)
    await verifier.verify(formerPk)
    verifier.verifyCached(formerPk)
    await verifier.verify(revoked)
    await verifier.close()
    const rows = tessera.counted.flatMap((r) => r.counts)
    expect(rows.sort((a, b) => a.account.localeCompare(b.account))).toEqual([
      { minute, account: '', token: '', outcomes: { expired: 1, revoked: 2 } },
      { minute, account: 'globex', token: 'cgone', outcomes: { revoked: 1 } },
    ])
  })

  it('splits counts by minute and does not count TesseraUnavailable', async () => {
    await start({ reportEveryMs: 3_600_000 })
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(T)
    await verifier.verify(pk)
    vi.setSystemTime(T + 30_000) // the next minute
    verifier.verifyCached(pk)
    verifier.verifyCached(pk)
    await tessera.stop()
    const other = tokenOf('pk', { u: 'acme', a: 'cnew' })
    expect(await verifier.verify(other)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    await tessera.restart()
    await verifier.close()
    expect(tessera.counted.flatMap((r) => r.counts)).toEqual([
      { minute, account: 'acme', token: 'cpk', outcomes: { valid: 1 } },
      { minute: '2026-11-27T10:06:00.000Z', account: 'acme', token: 'cpk', outcomes: { valid: 2 } },
    ])
  })

  it('counts nothing with reportEveryMs 0', async () => {
    await start({ reportEveryMs: 0 })
    await verifier.verify(pk)
    await verifier.verify('garbage')
    expect(verifier.stats().pendingRows).toBe(0)
    await verifier.close()
    expect(tessera.reports).toEqual([])
  })
})

describe('reports', () => {
  it('sends a batch every reportEveryMs as the wire format says, with a reporter name', async () => {
    await start({ reportEveryMs: 100, reporter: 'api-1:eu' })
    await verifier.verify(pk)
    await until(() => tessera.counted.length === 1)
    await verifier.verify(pk)
    await until(() => tessera.counted.length === 2)
    const [one, two] = tessera.counted.map((r) => [r.reporter, r.batch])
    expect(one).toEqual(['api-1:eu', expect.stringMatching(/^[A-Za-z0-9_-]{8}:1$/)])
    expect(two).toEqual(['api-1:eu', `${one?.[1]?.slice(0, -1)}2`])
    expect(tessera.counted[1]?.counts).toEqual([
      { minute: expect.any(String), account: 'acme', token: 'cpk', outcomes: { valid: 1 } },
    ])
    // Nothing counted: nothing sent.
    await new Promise((r) => setTimeout(r, 300))
    expect(tessera.reports).toHaveLength(2)
    expect(verifier.stats()).toMatchObject({ batchesSent: 2, pendingRows: 0, failedReports: 0 })
    expect(() => createVerifier({ url: tessera.url, adminKey: fakeKey, reporter: 'a b' })).toThrow(
      /reporter must be/,
    )
  })

  it('sends a batch whose answer was lost again with its id: counted once', async () => {
    await start({ reportEveryMs: 100 })
    tessera.loseReportAnswers = 1
    await verifier.verify(pk)
    await until(() => tessera.reports.length === 2)
    verifier.verifyCached(pk)
    await until(() => tessera.counted.length === 2)
    const [first, again, next] = tessera.reports
    expect(again).toEqual(first)
    expect(first?.counts).toEqual([expect.objectContaining({ outcomes: { valid: 1 } })])
    expect(next?.batch).toBe(`${first?.batch.slice(0, -1)}2`)
    expect(tessera.counted.map((r) => r.batch)).toEqual([first?.batch, next?.batch])
    // Counted before it answers: the verifier takes the answer a moment later.
    await until(() => verifier.stats().batchesSent === 2)
    expect(verifier.stats()).toMatchObject({ failedReports: 1, batchesSent: 2 })
  })

  it('keeps counts while Tessera cannot be reached, and sends them once it can', async () => {
    await start({ reportEveryMs: 100 })
    await verifier.verify(pk)
    await tessera.stop()
    for (let i = 0; i < 4; i++) verifier.verifyCached(pk)
    await until(() => verifier.stats().failedReports >= 2)
    expect(verifier.stats().pendingRows).toBeGreaterThan(0)
    await tessera.restart()
    await until(() => verifier.stats().pendingBatches === 0)
    const valid = tessera.counted.flatMap((r) => r.counts).map((c) => c.outcomes.valid)
    expect(valid.reduce((a, b) => (a ?? 0) + (b ?? 0), 0)).toBe(5)
  })

  it('keeps at most maxPendingRows, dropping the oldest', async () => {
    await start({ reportEveryMs: 3_600_000, maxPendingRows: 3 })
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(T)
    await verifier.verify(pk)
    // One row a minute: 7 minutes, 3 kept in all, open and cut into batches.
    const pending = [verifier.stats().pendingRows]
    for (let m = 1; m < 7; m++) {
      vi.setSystemTime(T + m * 60_000)
      verifier.verifyCached(pk)
      pending.push(verifier.stats().pendingRows)
    }
    expect(pending).toEqual([1, 2, 3, 3, 3, 3, 3])
    expect(verifier.stats()).toMatchObject({ droppedRows: 4, pendingRows: 3, pendingBatches: 2 })
    await verifier.close()
    expect(verifier.stats().droppedRows).toBe(4)
    expect(tessera.counted.flatMap((r) => r.counts.map((c) => c.minute))).toEqual(
      [4, 5, 6].map((m) => new Date(T - 30_000 + m * 60_000).toISOString()),
    )
    // Batches 1 (minutes 0-2) and 2 (minute 3) lost their rows to later ones.
    expect(tessera.counted.map((r) => r.batch.split(':')[1])).toEqual(['3', '4', '5'])
  })

  it('keeps at most maxPendingRows open and queued together, many keys in one minute', async () => {
    await start({ reportEveryMs: 3_600_000, maxPendingRows: 2 })
    const tokens = ['a', 'b', 'c', 'd', 'e'].map((a) => tokenOf('pk', { u: 'acme', a }))
    for (const [i, t] of tokens.entries()) {
      tessera.answers.set(t, active({ username: 'acme', usage: 'pk', id: `c${i}`, scope: '' }))
      await verifier.verify(t)
      expect(verifier.stats().pendingRows).toBe(Math.min(i + 1, 2))
    }
    expect(verifier.stats().droppedRows).toBe(3)
    await verifier.close()
    expect(tessera.counted.flatMap((r) => r.counts.map((c) => c.token))).toEqual(['c3', 'c4'])
  })

  it('a restarted verifier of the same reporter name has its batches counted', async () => {
    await start({ reportEveryMs: 3_600_000, reporter: 'edge-1' })
    await verifier.verify(pk)
    await verifier.close()
    await start({ reportEveryMs: 3_600_000, reporter: 'edge-1' })
    verifier.verifyCached(pk)
    await verifier.verify(pk)
    await verifier.close()
    expect(tessera.reports).toHaveLength(2)
    expect(tessera.counted.map((r) => [r.reporter, r.counts[0]?.outcomes])).toEqual([
      ['edge-1', { valid: 1 }],
      ['edge-1', { valid: 1 }],
    ])
    expect(tessera.counted[0]?.batch).not.toBe(tessera.counted[1]?.batch)
  })
})
