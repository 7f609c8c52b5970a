import { describe, expect, it } from 'vitest'
import { BoundedMap, TokenCache } from '../../src/tokens/cache.js'

describe('BoundedMap', () => {
  it('never holds more than its bound, and forgets the least recently used first', () => {
    const map = new BoundedMap<number>(4)
    for (let i = 0; i < 4; i++) map.set(`k${i}`, i)
    expect(map.size).toBe(4)
    expect(map.get('k0')).toBe(0) // used again: survives the next swap
    map.set('k4', 4)
    map.set('k5', 5)
    // k1 was dropped with the old generation when k0 was brought back; k2, k3 went next.
    expect(map.size).toBe(3)
    expect([0, 1, 2, 3, 4, 5].map((i) => map.get(`k${i}`))).toEqual([
      0,
      undefined,
      undefined,
      undefined,
      4,
      5,
    ])
    for (let i = 0; i < 1000; i++) map.set(`x${i}`, i)
    expect(map.size).toBe(4)
    expect(map.get('x999')).toBe(999)
    expect(map.get('x995')).toBeUndefined()
  })

  it('replaces a value in place and deletes from either generation', () => {
    const map = new BoundedMap<string>(4)
    map.set('a', '1').set('b', '2').set('c', '3')
    map.set('a', 'one')
    map.set('c', 'three')
    expect(map.get('a')).toBe('one')
    expect(map.get('c')).toBe('three')
    expect(map.size).toBe(3)
    expect(map.delete('b')).toBe(true)
    expect(map.delete('b')).toBe(false)
    expect(map.get('b')).toBeUndefined()
    map.clear()
    expect(map.size).toBe(0)
    expect(map.get('a')).toBeUndefined()
  })
})

describe('TokenCache', () => {
  const record = (id: string) => ({
    id,
    username: 'alice',
    usage: 'pk' as const,
    isDefault: false,
    note: '',
    scopes: [],
    allowedUrls: null,
    scopeless: true,
    keyId: 'k1',
    created: '2026-11-22T00:00:00.000Z',
    modified: '2026-11-22T00:00:00.000Z',
  })

  it('does not keep a record read before an invalidation of any token', () => {
    const cache = new TokenCache()
    const readAt = cache.generation
    cache.invalidate('other')
    cache.set(record('a'), readAt)
    expect(cache.get('a')).toBeUndefined()
    cache.set(record('a'), cache.generation)
    expect(cache.get('a')?.id).toBe('a')
    cache.invalidate('a')
    expect(cache.get('a')).toBeUndefined()
  })

  it('holds nothing while disabled, and starts empty when enabled again', () => {
    const cache = new TokenCache()
    cache.set(record('a'), cache.generation)
    cache.setEnabled(false)
    cache.set(record('b'), cache.generation)
    expect([cache.get('a'), cache.get('b')]).toEqual([undefined, undefined])
    cache.setEnabled(true)
    expect(cache.get('a')).toBeUndefined()
  })
})
