import { describe, expect, it } from 'vitest'
import type { VerificationRow } from '../../src/verification/log.js'
import { type LogBatch, textOf, VerificationLog } from '../../src/verification/log-writer.js'

// The verification log's buffer (src/verification/log-writer.ts) on its own: what a batch holds,
// the bound, a database away and back, a stop. The sources' rows are in
// test/http/verification-log.test.ts.

const day = 86_400_000
const T0 = Date.parse('2026-11-29T23:59:59.000Z')

const row = (i: number, over: Partial<VerificationRow> = {}): VerificationRow => ({
  at: T0 + i * 400,
  account: 'alice',
  tokenId: 'cmi0000000000000000000001',
  source: 'retrieve',
  outcome: 'valid',
  limit: null,
  ip: '192.0.2.7',
  origin: null,
  requestId: `req-${i}`,
  durationUs: 40 + i,
  ...over,
})

/** A database that refuses while `away`, else keeps each batch as it was sent. */
function database() {
  const batches: { rows: unknown[][]; days: number[] }[] = []
  const db = {
    away: false,
    batches,
    async write(batch: LogBatch) {
      if (db.away) throw new Error('connect ECONNREFUSED')
      const rows = JSON.parse(textOf(batch)) as unknown[][]
      expect(rows).toHaveLength(batch.count)
      batches.push({ rows, days: batch.days })
    },
  }
  return db
}

const logOf = (db: ReturnType<typeof database>, capacity = 10, mode: 'all' | 'refused' = 'all') =>
  new VerificationLog({ mode, capacity, batch: 4, instance: 'inst0001', write: db.write })

describe('the verification log buffer', () => {
  it('writes each row as the insert takes it, ids in order, each batch with its days', async () => {
    const db = database()
    const log = logOf(db)
    for (let i = 0; i < 5; i++) log.add(row(i))
    await log.flush()
    expect(db.batches.map((b) => b.rows.length)).toEqual([4, 1])
    expect(db.batches[0]?.rows[0]).toEqual([
      T0,
      'inst000100000000001',
      'alice',
      'cmi0000000000000000000001',
      'retrieve',
      'valid',
      null,
      '192.0.2.7',
      null,
      'req-0',
      40,
    ])
    expect(db.batches.flatMap((b) => b.rows.map((r) => r[1]))).toEqual(
      [1, 2, 3, 4, 5].map((n) => `inst0001${String(n).padStart(11, '0')}`),
    )
    // 23:59:59.000, .400, .800 on the first day; 00:00:00.200 on the next.
    const first = T0 - (T0 % day)
    expect(db.batches[0]?.days).toEqual([first, first + day])
    expect(db.batches[1]?.days).toEqual([first + day])
    expect([log.written, log.dropped, log.pending]).toEqual([5, 0, 0])
  })

  it('escapes what a client sent, so a quote or a control character cannot break a batch', async () => {
    const db = database()
    const log = logOf(db)
    const odd = 'a"b\\c\nd\u0000é😀'
    log.add(
      row(0, { account: odd, tokenId: odd, ip: odd, origin: odd, requestId: odd, limit: odd }),
    )
    await log.flush()
    expect(db.batches[0]?.rows[0]).toEqual([
      T0,
      'inst000100000000001',
      odd,
      odd,
      'retrieve',
      'valid',
      odd,
      odd,
      odd,
      odd,
      40,
    ])
  })

  it('keeps a refused batch at the front, in order, bounded; writes it when the database is back', async () => {
    const db = database()
    const log = logOf(db, 6)
    db.away = true
    for (let i = 0; i < 5; i++) log.add(row(i))
    await log.flush()
    expect([log.written, log.pending, log.dropped]).toEqual([0, 5, 0])
    // Unwritten rows count against the bound: one more fits, the next two are dropped.
    for (let i = 5; i < 8; i++) log.add(row(i))
    expect([log.pending, log.dropped]).toEqual([6, 2])
    db.away = false
    await log.flush()
    expect(db.batches.flatMap((b) => b.rows.map((r) => r[9]))).toEqual(
      [0, 1, 2, 3, 4, 5].map((i) => `req-${i}`),
    )
    expect([log.written, log.pending, log.dropped]).toEqual([6, 0, 2])
  })

  it('counts what is still unwritten at stop as dropped', async () => {
    const db = database()
    const log = logOf(db)
    db.away = true
    for (let i = 0; i < 3; i++) log.add(row(i))
    await log.stop()
    expect([log.written, log.pending, log.dropped]).toEqual([0, 0, 3])
  })

  it('stores refusals only with refused, and sends every row on when forwarding', async () => {
    const db = database()
    const log = logOf(db, 10, 'refused')
    expect([log.keeps(0), log.keeps(1)]).toEqual([false, true])
    const sent: string[] = []
    log.forwardTo((r) => sent.push(r.outcome))
    expect(log.keeps(0)).toBe(true)
    log.add(row(0))
    log.add(row(1, { outcome: 'revoked' }))
    await log.flush()
    expect(sent).toEqual(['valid', 'revoked'])
    expect(db.batches.flatMap((b) => b.rows.map((r) => r[5]))).toEqual(['revoked'])
    expect([log.written, log.dropped]).toEqual([1, 0])
  })

  it('gives a batch sealed for room (not count) the days of its own rows', async () => {
    const db = database()
    const log = logOf(db)
    // Each ~300 KB of room (3 bytes a character at most): the fourth row starts a batch.
    const long = 'o'.repeat(100_000)
    for (let i = 0; i < 4; i++) log.add(row(i, { origin: long }))
    await log.flush()
    const first = T0 - (T0 % day)
    expect(db.batches.map((b) => [b.rows.length, b.days])).toEqual([
      [3, [first]],
      [1, [first + day]],
    ])
  })

  it('drops a row too long for a batch (no source makes one), counting it, and keeps the rest', async () => {
    const db = database()
    const log = logOf(db)
    log.add(row(0))
    log.add(row(1, { origin: 'x'.repeat(200_000) }))
    log.add(row(2))
    await log.flush()
    expect(db.batches.flatMap((b) => b.rows.map((r) => r[9]))).toEqual(['req-0', 'req-2'])
    expect([log.written, log.dropped, log.pending]).toEqual([2, 1, 0])
  })
})
