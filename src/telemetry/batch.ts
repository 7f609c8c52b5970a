import type { Batching } from './config.js'

/** What one signal's exports came to, since start: read by /metrics. */
export interface ExportCounters {
  /** Items (spans, log records, metric points) the receiver accepted. */
  exported: number
  /** Items refused at the door: the queue full, or the processor shut down (never metrics). */
  dropped: number
  /** Export requests that failed: refused, timed out, unreachable receiver. */
  failedExports: number
  /** Items in those requests: lost too (not retried). */
  failedItems: number
}

export const newCounters = (): ExportCounters => ({
  exported: 0,
  dropped: 0,
  failedExports: 0,
  failedItems: 0,
})

/**
 * The OpenTelemetry batch processor: items wait in a bounded queue (past `maxQueueSize` they are
 * dropped and counted, never the caller held up), and go out `maxExportBatchSize` at a time,
 * when that many wait or every `scheduleDelayMs`; one export in flight. `send` settles within
 * its timeout; a failed batch is counted and not retried, so a receiver that is down costs a
 * bounded queue and no memory growth.
 */
export class BatchQueue<T> {
  readonly counters = newCounters()
  private queue: T[] = []
  private timer: NodeJS.Timeout | undefined
  private inFlight: Promise<void> | undefined
  private closed = false

  constructor(
    private readonly bounds: Batching,
    private readonly send: (items: T[]) => Promise<void>,
    /** Told of each failed export (the first of a run of them is logged). */
    private readonly onFailure: (err: unknown) => void = () => {},
  ) {}

  add(item: T): void {
    if (this.closed || this.queue.length >= this.bounds.maxQueueSize) {
      this.counters.dropped++
      return
    }
    this.queue.push(item)
    if (this.queue.length >= this.bounds.maxExportBatchSize) this.exportNow()
    else this.schedule()
  }

  /** Items waiting. */
  get size(): number {
    return this.queue.length
  }

  private schedule() {
    if (this.timer !== undefined || this.inFlight !== undefined || this.queue.length === 0) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.exportNow()
    }, this.bounds.scheduleDelayMs)
    this.timer.unref()
  }

  /** Starts an export of the next batch unless one is in flight (it starts the next itself). */
  private exportNow() {
    if (this.inFlight !== undefined || this.queue.length === 0) return
    clearTimeout(this.timer)
    this.timer = undefined
    const batch = this.queue.splice(0, this.bounds.maxExportBatchSize)
    this.inFlight = this.exportBatch(batch).finally(() => {
      this.inFlight = undefined
      if (this.queue.length >= this.bounds.maxExportBatchSize) this.exportNow()
      else this.schedule()
    })
  }

  private async exportBatch(batch: T[]) {
    try {
      await this.send(batch)
      this.counters.exported += batch.length
    } catch (err) {
      this.counters.failedExports++
      this.counters.failedItems += batch.length
      this.onFailure(err)
    }
  }

  /** Exports everything queued now, batch after batch, and waits for the last. */
  async flush(): Promise<void> {
    while (this.inFlight !== undefined || this.queue.length > 0) {
      this.exportNow()
      await this.inFlight
    }
  }

  /**
   * Takes no more items (they count as dropped) and exports those queued, for at most
   * `deadlineMs`: what is still queued then is dropped, so that a receiver that is down cannot
   * hold a shutdown up.
   */
  async shutdown(deadlineMs: number): Promise<void> {
    this.closed = true
    let deadline: NodeJS.Timeout | undefined
    const late = new Promise<void>((resolve) => {
      deadline = setTimeout(resolve, deadlineMs)
      deadline.unref()
    })
    await Promise.race([this.flush(), late])
    clearTimeout(deadline)
    clearTimeout(this.timer)
    this.timer = undefined
    this.counters.dropped += this.queue.length
    this.queue = []
  }
}
