import { Redis } from 'ioredis'
import type { Logger } from 'pino'

/** DASHBOARD.md section 5: failed sign-ins allowed per key within the window. */
export const throttleWindowMs = 15 * 60_000
export const limits = { user: 5, ip: 20 }

export type ThrottleKey = { kind: keyof typeof limits; value: string }

const keyText = (k: ThrottleKey) => `${k.kind}:${k.value}`

interface Counter {
  count: number
  until: number
}

/**
 * Failed sign-ins per username and per client address, in windows of 15 minutes that open
 * at the first failure. Shared through Redis when configured; while Redis cannot be reached it
 * counts in process, as the API's rate limit does.
 */
export class SignInThrottle {
  private readonly local = new Map<string, Counter>()
  private readonly redis?: Redis

  constructor(
    redis: { url: string; keyPrefix: string } | undefined,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {
    if (redis === undefined) return
    this.prefix = `${redis.keyPrefix}signin:`
    this.redis = new Redis(redis.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    })
    this.redis.on('error', () => {})
  }

  private prefix = ''

  /** Seconds until another attempt is allowed; 0 when it is allowed now. */
  async retryAfter(keys: ThrottleKey[]): Promise<number> {
    let wait = 0
    for (const key of keys) {
      const { count, until } = await this.read(key)
      if (count >= limits[key.kind]) wait = Math.max(wait, Math.ceil((until - this.now()) / 1000))
    }
    return wait
  }

  async fail(keys: ThrottleKey[]): Promise<void> {
    for (const key of keys) await this.add(key)
  }

  async clear(key: ThrottleKey): Promise<void> {
    this.local.delete(keyText(key))
    await this.shared((r) => r.del(this.prefix + keyText(key)))
  }

  async close() {
    this.redis?.disconnect()
  }

  private async read(key: ThrottleKey): Promise<Counter> {
    const shared = await this.shared(async (r) => {
      const [[, count], [, ttl]] = (await r
        .multi()
        .get(this.prefix + keyText(key))
        .pttl(this.prefix + keyText(key))
        .exec()) as [[unknown, string | null], [unknown, number]]
      return { count: Number(count ?? 0), until: this.now() + Math.max(0, ttl) }
    })
    if (shared !== undefined) return shared
    const counter = this.local.get(keyText(key))
    return counter !== undefined && counter.until > this.now() ? counter : { count: 0, until: 0 }
  }

  private async add(key: ThrottleKey): Promise<void> {
    const text = keyText(key)
    const done = await this.shared(async (r) => {
      const [[, count]] = (await r
        .multi()
        .incr(this.prefix + text)
        .pexpire(this.prefix + text, throttleWindowMs, 'NX')
        .exec()) as [[unknown, number]]
      return count
    })
    if (done !== undefined) return
    const now = this.now()
    const counter = this.local.get(text)
    if (counter === undefined || counter.until <= now) {
      if (this.local.size >= 100_000) this.prune(now)
      this.local.set(text, { count: 1, until: now + throttleWindowMs })
    } else counter.count++
  }

  /** Runs a Redis command; undefined (count in process) when there is no Redis or it fails. */
  private async shared<T>(command: (redis: Redis) => Promise<T>): Promise<T | undefined> {
    if (this.redis === undefined || this.redis.status !== 'ready') return undefined
    try {
      return await command(this.redis)
    } catch (err) {
      this.log.warn(
        { err: (err as Error).message },
        'sign-in throttle: Redis failed, counting here',
      )
      return undefined
    }
  }

  private prune(now: number) {
    for (const [key, counter] of this.local) if (counter.until <= now) this.local.delete(key)
  }
}
