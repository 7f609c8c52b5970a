import type { ClientRequest, IncomingMessage } from 'node:http'
import { type SseEvent, SseParser } from './sse.js'
import { TesseraUnreachableError, type Transport } from './transport.js'

export interface EventStreamHandlers {
  /** The stream answered 200; `resumed`: it was asked to continue after a known event id. */
  onOpen(resumed: boolean): void
  onEvent(event: SseEvent): void
  /** The stream is down; `lastLiveAt` is the last moment it was known to be live (ms). */
  onDown(lastLiveAt: number): void
  onError(err: Error): void
}

export interface EventStreamOptions {
  path: string
  /** No byte (event or `: ping`) for this long: the connection is taken for dead. */
  heartbeatTimeoutMs: number
  /** Longest wait between reconnection attempts. */
  maxRetryMs: number
}

/**
 * One Server-Sent Events connection to Tessera, kept open: reconnects after the server's
 * `retry` delay (doubling while attempts fail, up to maxRetryMs, with jitter) and resumes with
 * `Last-Event-ID`. Timers are unref'd: the stream alone does not keep a process running.
 */
export class EventStream {
  private readonly parser: SseParser
  private request: ClientRequest | undefined
  private retryMs = 1000
  private failures = 0
  private lastByteAt = 0
  private watchdog: NodeJS.Timeout | undefined
  private reconnect: NodeJS.Timeout | undefined
  private closed = false
  /** Increases with each connection, so that a late callback of an old one is ignored. */
  private generation = 0

  constructor(
    private readonly transport: Transport,
    private readonly options: EventStreamOptions,
    private readonly handlers: EventStreamHandlers,
  ) {
    this.parser = new SseParser({
      onEvent: (event) => this.handlers.onEvent(event),
      onRetry: (ms) => {
        this.retryMs = ms
      },
    })
  }

  get lastEventId(): string {
    return this.parser.lastEventId
  }

  start(): void {
    if (this.closed || this.request !== undefined) return
    const generation = ++this.generation
    const resumeFrom = this.parser.lastEventId
    this.parser.resume(resumeFrom)
    const headers: Record<string, string> = resumeFrom === '' ? {} : { 'last-event-id': resumeFrom }
    const req = this.transport.openStream(this.options.path, headers)
    this.request = req
    // Until the answer comes, the connection attempt itself is what is watched.
    this.touch(generation)
    req.on('response', (res) => this.opened(generation, res, resumeFrom !== ''))
    req.on('error', (err) => this.down(generation, err))
    req.on('close', () => this.down(generation))
    req.end()
  }

  close(): void {
    this.closed = true
    clearTimeout(this.watchdog)
    clearTimeout(this.reconnect)
    this.request?.destroy()
    this.request = undefined
  }

  private opened(generation: number, res: IncomingMessage, resumed: boolean) {
    const type = res.headers['content-type'] ?? ''
    if (res.statusCode !== 200 || !type.startsWith('text/event-stream')) {
      res.resume()
      const hint = res.statusCode === 401 ? ' (is the operator key right?)' : ''
      this.handlers.onError(
        new TesseraUnreachableError(
          `the event stream answered ${res.statusCode} ${type}${hint}`,
          res.statusCode,
        ),
      )
      this.request?.destroy()
      return
    }
    res.socket.unref()
    res.setEncoding('utf8')
    this.failures = 0
    this.touch(generation)
    this.handlers.onOpen(resumed)
    res.on('data', (chunk: string) => {
      if (generation !== this.generation) return
      this.touch(generation)
      this.parser.push(chunk)
    })
    res.on('error', (err) => this.down(generation, err))
    res.on('end', () => this.down(generation))
  }

  private touch(generation: number) {
    this.lastByteAt = Date.now()
    clearTimeout(this.watchdog)
    this.watchdog = setTimeout(() => {
      // Silent for too long (a half-open connection, a stuck proxy): live only until its last byte.
      this.down(generation, new Error('the event stream went silent'), this.lastByteAt)
    }, this.options.heartbeatTimeoutMs)
    this.watchdog.unref()
  }

  private down(generation: number, err?: Error, lastLiveAt = Date.now()) {
    if (generation !== this.generation || this.request === undefined) return
    const req = this.request
    this.request = undefined
    this.generation++
    clearTimeout(this.watchdog)
    req.destroy()
    if (this.closed) return
    if (err !== undefined) {
      this.handlers.onError(
        err instanceof TesseraUnreachableError
          ? err
          : new TesseraUnreachableError(`event stream: ${err.message}`),
      )
    }
    this.handlers.onDown(lastLiveAt)
    const backoff = Math.min(this.retryMs * 2 ** this.failures, this.options.maxRetryMs)
    this.failures++
    const delay = backoff * (0.8 + Math.random() * 0.4)
    this.reconnect = setTimeout(() => this.start(), delay)
    this.reconnect.unref()
  }
}
