import { describe, expect, it } from 'vitest'
import { Batcher } from '../../src/db/batcher.js'
import { Buckets } from '../../src/metrics/histogram.js'

describe('group commit', () => {
  it('writes the items added in one turn together, and settles each caller', async () => {
    const writes: number[][] = []
    const b = new Batcher<number>(async (items) => {
      writes.push(items)
    })
    await Promise.all([b.add(1), b.add(2), b.add(3)])
    await b.add(4)
    expect(writes).toEqual([[1, 2, 3], [4]])
  })

  it('fails only the caller whose item fails', async () => {
    const b = new Batcher<number>(async (items) => {
      if (items.includes(2)) throw new Error('bad item')
    })
    const results = await Promise.allSettled([b.add(1), b.add(2), b.add(3)])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  })
})

describe('group commit with a slow write', () => {
  it('keeps one write out at a time and writes what arrived meanwhile as the next batch', async () => {
    const writes: number[][] = []
    let out = 0
    let most = 0
    const b = new Batcher<number>(async (items) => {
      out++
      most = Math.max(most, out)
      writes.push(items)
      await new Promise((resolve) => setTimeout(resolve, 20))
      out--
    })
    const first = b.add(1)
    await new Promise((resolve) => setTimeout(resolve, 5)) // 1 is being written
    const rest = [b.add(2), b.add(3)]
    await new Promise((resolve) => setImmediate(resolve))
    rest.push(b.add(4))
    await Promise.all([first, ...rest])
    expect(writes).toEqual([[1], [2, 3, 4]])
    expect(most).toBe(1)
  })
})

describe('group commit figures for /metrics', () => {
  it('observes the size of every batch and counts every failed write', async () => {
    const groupCommits = { sizes: new Buckets([1, 2, 5, 10, 20, 50, 100, 200, 500]), failures: 0 }
    const { sizes } = groupCommits
    const before = { ...sizes, ones: sizes.counts[0] as number, failures: groupCommits.failures }
    const b = new Batcher<number>(
      async (items) => {
        if (items.includes(2)) throw new Error('bad item')
      },
      500,
      1,
      groupCommits,
    )
    await Promise.allSettled([b.add(1), b.add(2), b.add(3)])
    // One batch of 3, which failed; its items retried one by one (not batches): 2 fails again.
    expect(sizes.count - before.count).toBe(1)
    expect(sizes.sum - before.sum).toBe(3)
    expect(groupCommits.failures - before.failures).toBe(2)
    await b.add(4)
    expect(sizes.count - before.count).toBe(2)
    expect((sizes.counts[0] as number) - before.ones).toBe(1)
  })
})

describe('group commit, pipelined', () => {
  it('keeps up to `depth` writes out, each batch what arrived before it was sent, in order', async () => {
    const writes: number[][] = []
    const release: (() => void)[] = []
    let out = 0
    let most = 0
    const b = new Batcher<number>(
      async (items) => {
        out++
        most = Math.max(most, out)
        writes.push(items)
        await new Promise<void>((resolve) => release.push(resolve))
        out--
      },
      500,
      2,
    )
    const turn = () => new Promise((resolve) => setImmediate(resolve))
    const all = [b.add(1), b.add(2)]
    await turn() // [1, 2] is out
    all.push(b.add(3))
    await turn() // [3] is out beside it
    all.push(b.add(4), b.add(5))
    await turn() // two are out: 4 and 5 wait
    all.push(b.add(6))
    await turn()
    expect(writes).toEqual([[1, 2], [3]])
    release[0]?.()
    await all[0]
    await turn() // one came back: the next batch goes
    expect(writes).toEqual([[1, 2], [3], [4, 5, 6]])
    release[1]?.()
    release[2]?.()
    await Promise.all(all)
    expect(most).toBe(2)
  })

  it('settles each caller when its own batch is written, not when an earlier one is', async () => {
    const release: (() => void)[] = []
    const b = new Batcher<number>(
      () => new Promise<void>((resolve) => release.push(resolve)).then(() => undefined),
      500,
      2,
    )
    const settled: number[] = []
    const first = b.add(1).then(() => settled.push(1))
    await new Promise((resolve) => setImmediate(resolve))
    const second = b.add(2).then(() => settled.push(2))
    await new Promise((resolve) => setImmediate(resolve))
    expect(release).toHaveLength(2)
    release[1]?.()
    await second
    expect(settled).toEqual([2])
    release[0]?.()
    await first
    expect(settled).toEqual([2, 1])
  })
})

describe('group commit with the database away', () => {
  it('fails every item of the batch with its error, without writing them one by one', async () => {
    const writes: number[][] = []
    const b = new Batcher<number>(async (items) => {
      writes.push(items)
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
        code: 'ECONNREFUSED',
      })
    })
    const results = await Promise.allSettled([b.add(1), b.add(2), b.add(3)])
    expect(
      results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.status)),
    ).toEqual([
      'connect ECONNREFUSED 127.0.0.1:5432',
      'connect ECONNREFUSED 127.0.0.1:5432',
      'connect ECONNREFUSED 127.0.0.1:5432',
    ])
    expect(writes).toEqual([[1, 2, 3]])
  })
})
