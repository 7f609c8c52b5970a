import { Redis } from 'ioredis'
import type { Logger } from 'pino'

/** DASHBOARD.md section 5: failed sign-ins allowed per key within the window. */
export const throttleWindowMs = 15 * 60_000
/**
 * Attempts per key within the window: sign-in failures per username and per address, and the
 * anonymous passkey challenges an address may ask for (each is a row until it expires).
 */
export const limits = { user: 5, ip: 20, challenge: 30 }

export type ThrottleKey = { kind: keyof typeof limits; value: string }

const keyText = (k: ThrottleKey) => `${k.kind}:${k.value}`

interface Counter {
  count: number
  until: number
}

/**
 * Takes one attempt on every key, atomically: when one is past its limit, none is taken and
 * the answer is the milliseconds until it opens again; otherwise 0. A key's window opens with
 * its first attempt. ARGV: the window, then each key's limit.
 */
const reserveScript = `
local wait = 0
for i, key in ipairs(KEYS) do
  local count = redis.call('incr', key)
  if redis.call('pttl', key) < 0 then redis.call('pexpire', key, ARGV[1]) end
  if count > tonumber(ARGV[i + 1]) then wait = math.max(wait, redis.call('pttl', key)) end
end
if wait > 0 then
  for _, key in ipairs(KEYS) do redis.call('decr', key) end
end
return wait`

/** Gives one attempt back on every key that still counts one. */
const releaseScript = `
for _, key in ipairs(KEYS) do
  if tonumber(redis.call('get', key) or '0') > 0 then redis.call('decr', key) end
end
return 0`

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

  /**
   * Takes an attempt before it is checked, so that concurrent attempts cannot all pass one
   * check: 0 when it may go ahead (it counts as a failure unless `release`d), else the seconds
   * to wait, and nothing was taken.
   */
  async reserve(keys: ThrottleKey[]): Promise<number> {
    const texts = keys.map((k) => this.prefix + keyText(k))
    const window = String(throttleWindowMs)
    const shared = await this.shared(
      async (r) =>
        (await r.eval(
          reserveScript,
          texts.length,
          ...texts,
          window,
          ...keys.map((k) => String(limits[k.kind])),
        )) as number,
    )
    const waitMs = shared ?? this.reserveHere(keys)
    return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0
  }

  /** Gives back an attempt `reserve` took: it succeeded, so it is not a failure. */
  async release(keys: ThrottleKey[]): Promise<void> {
    const texts = keys.map((k) => this.prefix + keyText(k))
    const done = await this.shared((r) => r.eval(releaseScript, texts.length, ...texts))
    if (done !== undefined) return
    const now = this.now()
    for (const key of keys) {
      const counter = this.local.get(keyText(key))
      if (counter !== undefined && counter.until > now && counter.count > 0) counter.count--
    }
  }

  async clear(key: ThrottleKey): Promise<void> {
    this.local.delete(keyText(key))
    await this.shared((r) => r.del(this.prefix + keyText(key)))
  }

  async close() {
    this.redis?.disconnect()
  }

  /** `reserve` in process: nothing awaited between the checks and the counts. */
  private reserveHere(keys: ThrottleKey[]): number {
    const now = this.now()
    const counters = keys.map((key) => {
      const text = keyText(key)
      let counter = this.local.get(text)
      if (counter === undefined || counter.until <= now) {
        if (this.local.size >= 100_000) this.prune(now)
        counter = { count: 0, until: now + throttleWindowMs }
        this.local.set(text, counter)
      }
      return counter
    })
    let wait = 0
    keys.forEach((key, i) => {
      const counter = counters[i] as Counter
      if (counter.count + 1 > limits[key.kind]) wait = Math.max(wait, counter.until - now)
    })
    if (wait === 0) for (const counter of counters) counter.count++
    return wait
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
