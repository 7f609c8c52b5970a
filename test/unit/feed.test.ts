import { describe, expect, it } from 'vitest'
import type { OutboxEvent } from '../../src/db/outbox.js'
import { contiguous } from '../../src/events/feed.js'

const rows = (...seqs: number[]): OutboxEvent[] =>
  seqs.map((seq) => ({ seq, action: 'token.created', account: 'alice', body: `{"n":${seq}}` }))
const seqs = (events: OutboxEvent[]) => events.map((e) => e.seq)

describe('contiguous', () => {
  it('passes events that follow the position without a gap', () => {
    const gaps = new Map<number, number>()
    expect(seqs(contiguous(4, rows(5, 6, 7), gaps, 1_000, 2_000))).toEqual([5, 6, 7])
    expect(gaps.size).toBe(0)
  })

  it('holds what follows a gap until it is filled', () => {
    const gaps = new Map<number, number>()
    expect(seqs(contiguous(4, rows(5, 7, 8), gaps, 1_000, 2_000))).toEqual([5])
    expect([...gaps]).toEqual([[6, 1_000]])
    expect(seqs(contiguous(5, rows(7, 8), gaps, 2_999, 2_000))).toEqual([])
    // The transaction that held 6 committed.
    expect(seqs(contiguous(5, rows(6, 7, 8), gaps, 3_000, 2_000))).toEqual([6, 7, 8])
    expect(seqs(contiguous(8, rows(), gaps, 3_001, 2_000))).toEqual([])
    expect(gaps.size).toBe(0)
  })

  it('skips a gap that stays open for the wait (a transaction rolled back)', () => {
    const gaps = new Map<number, number>()
    expect(seqs(contiguous(0, rows(2, 3), gaps, 10_000, 2_000))).toEqual([])
    expect(seqs(contiguous(0, rows(2, 3), gaps, 11_999, 2_000))).toEqual([])
    expect(seqs(contiguous(0, rows(2, 3, 5), gaps, 12_000, 2_000))).toEqual([2, 3])
    expect([...gaps]).toEqual([[4, 12_000]])
    expect(seqs(contiguous(3, rows(5), gaps, 14_000, 2_000))).toEqual([5])
  })
})
