import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { AttemptLedger, type PrimaryAttempts } from '../ratelimit/attempts.js'

/** DASHBOARD.md section 5: failed sign-ins allowed per key within the window. */
export const throttleWindowMs = 15 * 60_000
/**
 * Attempts per key within the window: sign-in failures per username and per address, and the
 * anonymous passkey challenges an address may ask for (each is a row until it expires).
 */
export const limits = { user: 5, ip: 20, challenge: 30 }

export type ThrottleKey = { kind: keyof typeof limits; value: string }

const keyText = (k: ThrottleKey) => `${k.kind}:${k.value}`

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

/**
 * Failed attempts per key (DASHBOARD.md section 5), counted where every process serving the
 * dashboard sees the same count: in Redis with REDIS_URL; else, in a worker, by its primary for
 * the whole machine (`primary`); else in process. A process that cannot reach its shared count
 * (Redis down, the primary not answering) counts in process meanwhile.
 */
export class SignInThrottle {
  private readonly local = new AttemptLedger()
  private readonly redis?: Redis

  constructor(
    redis: { url: string; keyPrefix: string } | undefined,
    private readonly log: Logger,
    private readonly now: () => number,
    /** A worker's way to its primary's count (the context's, which closes it). */
    private readonly primary?: PrimaryAttempts,
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
    const counted = keys.map((k) => ({ key: keyText(k), limit: limits[k.kind] }))
    const waitMs =
      shared ??
      (await this.primary?.reserve(counted, throttleWindowMs)) ??
      this.local.reserve(counted, throttleWindowMs, this.now())
    return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0
  }

  /** Gives back an attempt `reserve` took: it succeeded, so it is not a failure. */
  async release(keys: ThrottleKey[]): Promise<void> {
    const texts = keys.map((k) => this.prefix + keyText(k))
    const done = await this.shared((r) => r.eval(releaseScript, texts.length, ...texts))
    if (done !== undefined) return
    const local = keys.map(keyText)
    if (this.primary?.release(local) !== true) this.local.release(local, this.now())
  }

  async clear(key: ThrottleKey): Promise<void> {
    this.local.clear(keyText(key))
    this.primary?.clear(keyText(key))
    await this.shared((r) => r.del(this.prefix + keyText(key)))
  }

  async close() {
    this.redis?.disconnect()
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
}
