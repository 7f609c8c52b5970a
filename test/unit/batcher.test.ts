import { describe, expect, it } from 'vitest'
import { Batcher } from '../../src/db/batcher.js'

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
