import { describe, expect, it } from 'vitest'
import { Batcher, groupCommits } from '../../src/db/batcher.js'

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
    const { sizes } = groupCommits
    const before = { ...sizes, ones: sizes.counts[0] as number, failures: groupCommits.failures }
    const b = new Batcher<number>(async (items) => {
      if (items.includes(2)) throw new Error('bad item')
    })
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
