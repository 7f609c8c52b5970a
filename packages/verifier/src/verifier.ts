import { refusals, type Verification, type VerifyOptions } from './answers.js'
import { check, type Entry, unavailable } from './entry.js'
import { EntryCache } from './entry-cache.js'
import { EventStream } from './event-stream.js'
import { type EntryTimes, entryOf, plausibleToken } from './introspection.js'
import { invalidate } from './invalidation.js'
import { defaults, type VerifierOptions, type VerifierStats } from './options.js'
import { Transport } from './transport.js'

export type { VerifierOptions, VerifierStats }

/**
 * Verifies Tessera tokens in process. A token is introspected once and its answer cached; one
 * Server-Sent Events connection drops cached answers as tokens and accounts change.
 */
export class Verifier {
  private readonly transport: Transport
  private readonly stream: EventStream
  private readonly cache: EntryCache
  private readonly inFlight = new Map<string, Promise<Entry>>()
  private readonly staleForMs: number
  private readonly maxAgeMs: number
  private readonly negativeTtlMs: number
  private readonly failFastMs: number
  private readonly report: (err: Error) => void
  private everLive = false
  private live = false
  private stale = false
  private closed = false
  private staleTimer: NodeJS.Timeout | undefined
  private unavailableUntil = 0
  private readyWaiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = []

  constructor(options: VerifierOptions) {
    if (!options.adminKey) throw new TypeError('adminKey is required')
    this.staleForMs = options.staleForMs ?? defaults.staleForMs
    this.maxAgeMs = options.maxAgeMs ?? defaults.maxAgeMs
    this.negativeTtlMs = options.negativeTtlMs ?? defaults.negativeTtlMs
    this.failFastMs = options.failFastMs ?? defaults.failFastMs
    this.cache = new EntryCache(options.maxEntries ?? defaults.maxEntries)
    this.transport = new Transport({
      url: options.url,
      adminKey: options.adminKey,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      timeoutMs: options.timeoutMs ?? defaults.timeoutMs,
    })
    let last = ''
    const onError = options.onError ?? ((err: Error) => process.emitWarning(err))
    this.report = (err) => {
      if (err.message === last) return
      last = err.message
      onError(err)
    }
    this.stream = new EventStream(
      this.transport,
      {
        path: '/admin/v1/events',
        heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? defaults.heartbeatTimeoutMs,
        maxRetryMs: options.maxRetryMs ?? defaults.maxRetryMs,
      },
      {
        onOpen: (resumed) => this.opened(resumed),
        onEvent: (event) => invalidate(this.cache, event),
        onDown: (lastLiveAt) => this.down(lastLiveAt),
        onError: (err) => this.report(err),
      },
    )
    this.stream.start()
  }

  /**
   * The answer from the cache, synchronously, or undefined when Tessera must be asked (call
   * verify). Allocates nothing in the usual case: answers are shared, frozen objects.
   */
  verifyCached(token: string, options?: VerifyOptions): Verification | undefined {
    const entry = this.cache.get(token)
    if (entry === undefined) return undefined
    const now = Date.now()
    if (now >= entry.expiresAt) {
      const answer = entry.answer
      if (
        !answer.valid ||
        answer.usage !== 'tk' ||
        answer.exp === undefined ||
        answer.exp * 1000 > now
      ) {
        this.cache.delete(entry)
        return undefined
      }
      // A tk past its exp stays expired: no need to ask.
      entry.answer = refusals.TokenExpired
      entry.expiresAt = now + Math.max(this.negativeTtlMs, 60_000)
    }
    return check(entry, options)
  }

  /** Verifies a token: from the cache, else by asking Tessera (once for concurrent callers). */
  async verify(token: string, options?: VerifyOptions): Promise<Verification> {
    const cached = this.verifyCached(token, options)
    if (cached !== undefined) return cached
    if (!plausibleToken(token)) return refusals.TokenMalformed
    if (this.closed) return refusals.TesseraUnavailable
    return check(await this.lookup(token), options)
  }

  /** Settles once the event stream has opened for the first time (answers are cached from then). */
  ready(): Promise<void> {
    if (this.everLive) return Promise.resolve()
    if (this.closed) return Promise.reject(new Error('the verifier is closed'))
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }))
  }

  stats(): VerifierStats {
    return {
      entries: this.cache.size,
      streamLive: this.live,
      serving: this.everLive && !this.stale,
      lastEventId: this.stream.lastEventId,
    }
  }

  /** Closes the event stream and the connections; later verifications fail closed. */
  close(): void {
    if (this.closed) return
    this.closed = true
    clearTimeout(this.staleTimer)
    this.stream.close()
    this.transport.close()
    this.cache.clear()
    for (const w of this.readyWaiters.splice(0)) w.reject(new Error('the verifier is closed'))
  }

  private lookup(token: string): Promise<Entry> {
    const pending = this.inFlight.get(token)
    if (pending !== undefined) return pending
    if (Date.now() < this.unavailableUntil) return Promise.resolve(unavailable)
    // Kept only if no event could have made the answer outdated while it was on its way.
    const ticket = this.everLive && !this.stale ? this.cache.ticket() : undefined
    const promise = this.transport
      .postJson('/admin/v1/introspect', { token })
      .then((body) => {
        const entry = entryOf(token, body, this.times())
        if (
          ticket !== undefined &&
          !this.closed &&
          (entry.answer.valid || this.negativeTtlMs > 0)
        ) {
          this.cache.add(entry, ticket)
        }
        return entry
      })
      .catch((err: Error) => {
        this.unavailableUntil = Date.now() + this.failFastMs
        this.report(err)
        return unavailable
      })
      .finally(() => {
        this.inFlight.delete(token)
        if (this.inFlight.size === 0) this.cache.settled()
      })
    this.inFlight.set(token, promise)
    return promise
  }

  private times(): EntryTimes {
    return { now: Date.now(), maxAgeMs: this.maxAgeMs, negativeTtlMs: this.negativeTtlMs }
  }

  private opened(resumed: boolean) {
    clearTimeout(this.staleTimer)
    this.staleTimer = undefined
    // Without a resumption point, changes made while it was away are unknown: start afresh.
    if (!resumed || this.stale) this.cache.clear()
    this.live = true
    this.stale = false
    this.unavailableUntil = 0
    if (!this.everLive) {
      this.everLive = true
      for (const w of this.readyWaiters.splice(0)) w.resolve()
    }
  }

  private down(lastLiveAt: number) {
    if (!this.live) return
    this.live = false
    const wait = lastLiveAt + this.staleForMs - Date.now()
    if (wait <= 0) {
      this.goStale()
      return
    }
    this.staleTimer = setTimeout(() => this.goStale(), wait)
    this.staleTimer.unref()
  }

  private goStale() {
    this.stale = true
    this.cache.clear()
  }
}

/** Starts a verifier: it opens its event stream at once. Call close() when done. */
export function createVerifier(options: VerifierOptions): Verifier {
  return new Verifier(options)
}
