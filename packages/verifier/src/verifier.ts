import { checkCost, refusals, type Verification, type VerifyOptions } from './answers.js'
import { Decisions } from './decisions.js'
import { check, type Entry, keptPastExpiry, unavailable } from './entry.js'
import { EntryCache } from './entry-cache.js'
import { EventStream } from './event-stream.js'
import { type EntryTimes, entryOf, plausibleToken } from './introspection.js'
import { invalidate } from './invalidation.js'
import { Metering } from './metering.js'
import { defaults, type VerifierOptions, type VerifierStats } from './options.js'
import { outcomeOfReason, valid } from './outcomes.js'
import { type Seen, startTracing, type Tracing } from './tracing.js'
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
  private readonly metering: Metering
  private readonly decisions: Decisions
  private readonly timeoutMs: number
  /** Set once `@opentelemetry/api` has loaded (or at once with `otel`). */
  private tracing: Tracing | undefined
  private everLive = false
  private live = false
  private stale = false
  private closed = false
  private closing: Promise<void> | undefined
  private staleTimer: NodeJS.Timeout | undefined
  private unavailableUntil = 0
  private readyWaiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = []

  constructor(options: VerifierOptions) {
    if (!options.adminKey) throw new TypeError('adminKey is required')
    this.staleForMs = options.staleForMs ?? defaults.staleForMs
    this.maxAgeMs = options.maxAgeMs ?? defaults.maxAgeMs
    this.negativeTtlMs = options.negativeTtlMs ?? defaults.negativeTtlMs
    this.failFastMs = options.failFastMs ?? defaults.failFastMs
    const maxEntries = options.maxEntries ?? defaults.maxEntries
    this.cache = new EntryCache(maxEntries)
    this.timeoutMs = options.timeoutMs ?? defaults.timeoutMs
    this.transport = new Transport({
      url: options.url,
      adminKey: options.adminKey,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      timeoutMs: this.timeoutMs,
    })
    let last = ''
    const onError = options.onError ?? ((err: Error) => process.emitWarning(err))
    this.report = (err) => {
      if (err.message === last) return
      last = err.message
      onError(err)
    }
    this.metering = new Metering(this.transport, options, this.report, this.failFastMs)
    this.decisions = new Decisions(this.metering, this.cache, () => this.closed)
    this.stream = new EventStream(
      this.transport,
      {
        path: '/admin/v1/events',
        heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? defaults.heartbeatTimeoutMs,
        maxRetryMs: options.maxRetryMs ?? defaults.maxRetryMs,
      },
      {
        onOpen: (resumed) => this.opened(resumed),
        onEvent: (event) =>
          invalidate(this.cache, event, (account, token) =>
            this.metering.credits.changed(account, token),
          ),
        onDown: (lastLiveAt) => this.down(lastLiveAt),
        onError: (err) => this.report(err),
      },
    )
    this.stream.start()
    startTracing(options, (tracing) => {
      this.tracing = tracing
    })
  }

  /**
   * The answer from the cache, synchronously, or undefined when Tessera must be asked (call
   * verify): the token is not cached, or its rate limits or credits need a lease. Allocates
   * nothing in the usual case: answers are shared, frozen objects, and counting increments a
   * number.
   */
  verifyCached(token: string, options?: VerifyOptions): Verification | undefined {
    // A bad cost throws, whatever the token (checked only when one is given: the usual call
    // gives none, and this is the hot path).
    if (options !== undefined && options.cost !== undefined) checkCost(options.cost)
    const entry = this.cache.get(token)
    if (entry === undefined) return undefined
    const parent = this.tracing?.parent()
    if (parent === undefined) return this.fromEntry(entry, options)
    const started = performance.now()
    const answer = this.fromEntry(entry, options)
    if (answer !== undefined) this.tracing?.span(parent, started, answer, entry.meter, true)
    return answer
  }

  /** A cached entry's decision, counted; undefined when Tessera must be asked. */
  private fromEntry(entry: Entry, options: VerifyOptions | undefined): Verification | undefined {
    const now = Date.now()
    if (now >= entry.expiresAt && !keptPastExpiry(entry, now, this.negativeTtlMs)) {
      this.cache.delete(entry)
      return undefined
    }
    const answer = check(entry, options)
    // The usual case, inline: a valid answer without credits, counted in its minute's row.
    const row = entry.meter?.row
    if (
      answer.valid &&
      entry.pool === undefined &&
      entry.limits === undefined &&
      row !== undefined &&
      now < row.end
    ) {
      row.counts[valid] = (row.counts[valid] as number) + 1
      return answer
    }
    // A decision from the cache takes well under the microsecond a row counts in: timed only as
    // a refusal whose row will be kept, so that neither a valid (metered) answer nor a flood of
    // refusals reads the clock; a refusal by its limits or credits here is not (undefined: 0).
    const started = !answer.valid && this.metering.refused.open ? performance.now() : undefined
    return this.decisions.decide(entry, answer, options, now, started)
  }

  /** Verifies a token: from the cache, else by asking Tessera (once for concurrent callers). */
  async verify(token: string, options?: VerifyOptions): Promise<Verification> {
    const parent = this.tracing?.parent()
    if (parent === undefined) return this.decide(token, options, undefined)
    const started = performance.now()
    const seen: Seen = { who: undefined, cached: false }
    const answer = await this.decide(token, options, seen)
    this.tracing?.span(parent, started, answer, seen.who, seen.cached)
    return answer
  }

  /** verify()'s decision; `seen` (when traced) is told whom it names and whether it was cached. */
  private async decide(
    token: string,
    options: VerifyOptions | undefined,
    seen: Seen | undefined,
  ): Promise<Verification> {
    if (options !== undefined && options.cost !== undefined) checkCost(options.cost)
    const known = this.cache.get(token)
    if (known !== undefined) {
      const cached = this.fromEntry(known, options)
      if (seen !== undefined) [seen.who, seen.cached] = [known.meter, true]
      if (cached !== undefined) return cached
    }
    // What is decided from here may wait: timed from now.
    const started = performance.now()
    if (!plausibleToken(token)) {
      const nobody = this.metering.nobody
      if (seen !== undefined) [seen.who, seen.cached] = [nobody, false]
      const malformed = outcomeOfReason.TokenMalformed
      this.metering.refuse(nobody, malformed, Date.now(), options, started)
      return refusals.TokenMalformed
    }
    if (this.closed) return refusals.TesseraUnavailable
    // Cached but short of a limit's block or of credits here, or asked now.
    const cachedEntry = this.cache.get(token)
    const entry = cachedEntry ?? (await this.lookup(token))
    if (seen !== undefined) [seen.who, seen.cached] = [entry.meter, cachedEntry !== undefined]
    // Closed meanwhile: not decided (nor counted) after the final report.
    if (this.closed) return refusals.TesseraUnavailable
    const now = Date.now()
    const decided = this.decisions.decide(entry, check(entry, options), options, now, started)
    if (decided !== undefined) return decided
    return this.decisions.withLeases(entry, options, started)
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
      ...this.metering.stats(),
    }
  }

  /**
   * Closes the event stream, hands back unspent leases and sends the counts not yet reported
   * (waiting at most timeoutMs), then closes the connections; later verifications fail closed.
   */
  close(): Promise<void> {
    if (this.closed) return this.closing ?? Promise.resolve()
    this.closed = true
    clearTimeout(this.staleTimer)
    this.stream.close()
    this.cache.clear()
    for (const w of this.readyWaiters.splice(0)) w.reject(new Error('the verifier is closed'))
    this.closing = this.metering.close(this.timeoutMs).finally(() => this.transport.close())
    return this.closing
  }

  private lookup(token: string): Promise<Entry> {
    const pending = this.inFlight.get(token)
    if (pending !== undefined) return pending
    if (Date.now() < this.unavailableUntil) return Promise.resolve(unavailable)
    // Kept only if no event could have made the answer outdated while it was on its way.
    const ticket = this.everLive && !this.stale ? this.cache.ticket() : undefined
    const promise = this.transport
      .postJson('/admin/v1/introspect', { token, cost: 0, count: false })
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
    return {
      now: Date.now(),
      maxAgeMs: this.maxAgeMs,
      negativeTtlMs: this.negativeTtlMs,
      meterKey: (account, token) => this.metering.counter.key(account, token),
      pool: (account, token) => this.metering.credits.pool(account, token),
      limits: (account, token, shape) => this.metering.limits.pool(account, token, shape),
    }
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
