import type { TokenRecord } from '../db/repositories.js'

/** A Map that forgets its oldest entries beyond `max`: bounded memory, no bookkeeping per hit. */
export class BoundedMap<V> extends Map<string, V> {
  constructor(private readonly max: number) {
    super()
  }

  override set(key: string, value: V) {
    if (this.size >= this.max && !this.has(key)) {
      const oldest = this.keys().next().value
      if (oldest !== undefined) this.delete(oldest)
    }
    return super.set(key, value)
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

  constructor(options: { maxRecords?: number; enabled?: boolean } = {}) {
    this.records = new BoundedMap(options.maxRecords ?? 50_000)
    this.strings = new BoundedMap(options.maxRecords ?? 50_000)
    this.enabled = options.enabled ?? true
  }

  get(id: string): TokenRecord | undefined {
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
