import { outcomeIndex } from '../usage/outcomes.js'
import type { LogMode, VerificationRow } from './log.js'

export interface LogWriterOptions {
  mode: LogMode
  /** The most rows held unwritten: past it a row is dropped (and counted), never the request. */
  capacity: number
  /** Rows per write (and a full one is written at once, not at the next tick). */
  batch: number
  /** Writes rows (one statement or transaction); throws when the database is away. */
  write(rows: VerificationRow[]): Promise<void>
  /** A write failed (once a flush, its error). */
  onError?(err: unknown): void
}

/** Where rows are sent besides the database (OTLP logs: docs/telemetry.md); never waited for. */
export type Forward = (rows: readonly VerificationRow[]) => void

/**
 * The verification log's buffer (docs/verifications.md): a row is pushed onto an array on the
 * hot path (no promise, no I/O), and written in batches off it, every `start` interval or as
 * soon as a batch is full. Bounded: a row that finds `capacity` rows unwritten is dropped and
 * counted in `dropped`, exactly; a batch the database refuses goes back to the front while
 * there is room, and what does not fit is dropped and counted the same way.
 */
export class VerificationLog {
  readonly mode: LogMode
  /** Rows dropped unwritten since start: the buffer was full, or a failed batch had no room. */
  dropped = 0
  /** Rows written since start. */
  written = 0
  private rows: VerificationRow[] = []
  private timer: NodeJS.Timeout | undefined
  private soon = false
  private flushing: Promise<void> | undefined
  private stopped = true
  private forward: Forward | undefined

  constructor(private readonly o: LogWriterOptions) {
    this.mode = o.mode
  }

  /**
   * Sends every row on as well, once written: with `refused`, the valid rows too, which only go
   * there (a columnar store takes every verification, the database the refusals).
   */
  forwardTo(forward: Forward): void {
    this.forward = forward
  }

  /** The verification of this outcome (an index of `outcomes`) makes a row. */
  keeps(outcome: number): boolean {
    if (this.mode === 'refused') return outcome !== outcomeIndex.valid || this.forward !== undefined
    return this.mode === 'all'
  }

  /** Rows waiting to be written. */
  get pending(): number {
    return this.rows.length
  }

  add(row: VerificationRow): void {
    if (this.rows.length >= this.o.capacity) {
      this.dropped++
      return
    }
    this.rows.push(row)
    if (this.rows.length >= this.o.batch && !this.soon && !this.stopped) {
      this.soon = true
      setImmediate(() => {
        this.soon = false
        void this.flush()
      })
    }
  }

  /** Writes every row held now, batch by batch; a flush already running is waited for first. */
  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing
    if (this.rows.length === 0) return
    this.flushing = this.writeAll().finally(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  private async writeAll() {
    const rows = this.rows
    this.rows = []
    for (let i = 0; i < rows.length; i += this.o.batch) {
      const batch = rows.slice(i, i + this.o.batch)
      // Forwarded valid rows are not the database's with `refused`.
      const stored = this.mode === 'refused' ? batch.filter((r) => r.outcome !== 'valid') : batch
      try {
        if (stored.length > 0) await this.o.write(stored)
        this.written += stored.length
        this.forward?.(batch)
      } catch (err) {
        this.o.onError?.(err)
        this.requeue(rows.slice(i))
        return
      }
    }
  }

  /** Rows not written go back ahead of those added meanwhile, as many as there is room for. */
  private requeue(unwritten: VerificationRow[]) {
    const room = Math.max(0, this.o.capacity - this.rows.length)
    const kept = unwritten.slice(0, room)
    this.dropped += unwritten.length - kept.length
    this.rows = kept.concat(this.rows)
  }

  /** Flushes every `everyMs` until stopped. */
  start(everyMs = 1000): void {
    this.stopped = false
    const tick = () => {
      this.timer = setTimeout(() => {
        void this.flush().finally(() => {
          if (!this.stopped) tick()
        })
      }, everyMs)
      this.timer.unref()
    }
    tick()
  }

  /** Stops the timer and writes what is held (once: rows a failing database keeps are dropped). */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    await this.flush()
    this.dropped += this.rows.length
    this.rows = []
  }
}
