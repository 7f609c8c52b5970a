import type { TokenRecord } from '../db/repositories.js'

/**
 * A map of at most `max` entries that forgets the least recently used half at a time: two
 * generations of plain Maps, swapped when the young one is full. No bookkeeping per hit, and
 * no walk over deleted slots to find an oldest entry (which a single Map makes slow).
 */
export class BoundedMap<V> {
  private young = new Map<string, V>()
  private old = new Map<string, V>()
  private readonly half: number

  constructor(max: number) {
    this.half = Math.max(1, Math.floor(max / 2))
  }

  get size() {
    return this.young.size + this.old.size
  }

  get(key: string): V | undefined {
    const value = this.young.get(key)
    if (value !== undefined || this.old.size === 0) return value
    const aged = this.old.get(key)
    if (aged !== undefined) {
      this.old.delete(key)
      this.add(key, aged)
    }
    return aged
  }

  set(key: string, value: V): this {
    if (this.young.has(key)) {
      this.young.set(key, value)
    } else {
      this.old.delete(key)
      this.add(key, value)
    }
    return this
  }

  delete(key: string): boolean {
    const young = this.young.delete(key)
    return this.old.delete(key) || young
  }

  clear() {
    this.young.clear()
    this.old.clear()
  }

  private add(key: string, value: V) {
    if (this.young.size >= this.half) {
      this.old = this.young
      this.young = new Map()
    }
    this.young.set(key, value)
  }
}

/**
 * Token records in process, so that validating a token costs no query. Correct only with
 * invalidation: every update and delete, here or on another instance, removes the entry
 * (see TokenChanges). While the change feed is down the cache is off and empty.
 *
 * `generation` closes the race between a read and an invalidation: a record read from the
 * database is cached only if no invalidation happened since the read began.
 */
export class TokenCache {
  private readonly records: BoundedMap<TokenRecord>
  /** pk/sk strings are derived from (usage, username, id, key): they never change for an id. */
  private readonly strings: BoundedMap<string>
  private enabled: boolean
  generation = 0
  /** Lookups answered from the cache, and those that go to the database (off counts as a miss). */
  hits = 0
  misses = 0

  constructor(options: { maxRecords?: number; enabled?: boolean } = {}) {
    this.records = new BoundedMap(options.maxRecords ?? 50_000)
    this.strings = new BoundedMap(options.maxRecords ?? 50_000)
    this.enabled = options.enabled ?? true
  }

  get size() {
    return this.records.size
  }

  get(id: string): TokenRecord | undefined {
    const record = this.enabled ? this.records.get(id) : undefined
    if (record === undefined) this.misses++
    else this.hits++
    return record
  }

  /** The record when it is cached, not counted as a lookup (a fast path's look ahead). */
  peek(id: string): TokenRecord | undefined {
    return this.enabled ? this.records.get(id) : undefined
  }

  /** Caches a record read when `generation` was `readAt`, unless something changed since. */
  set(record: TokenRecord, readAt: number) {
    if (this.enabled && readAt === this.generation) this.records.set(record.id, record)
  }

  invalidate(id: string) {
    this.generation++
    this.records.delete(id)
  }

  /** The change feed is down (false) or back (true): either way, start empty. */
  setEnabled(enabled: boolean) {
    this.generation++
    this.records.clear()
    this.enabled = enabled
  }

  tokenString(id: string, derive: () => string | undefined): string | undefined {
    let value = this.strings.get(id)
    if (value === undefined) {
      value = derive()
      if (value !== undefined) this.strings.set(id, value)
    }
    return value
  }
}
