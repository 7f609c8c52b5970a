import { rowText } from '../db/log-insert.js'
import { outcomes } from '../usage/outcomes.js'
import type { LogMode, VerificationRow } from './log.js'

const dayMs = 86_400_000
/** A batch's room: 1,000 rows of ~300 bytes, and a long one's (a row is at most ~1 KB). */
const openBytes = 512 * 1024

/** A batch's JSON text. */
export const textOf = (batch: LogBatch) =>
  Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength).toString('utf8')

/** Rows written together: one statement (db/log-insert.ts). */
export interface LogBatch {
  /** The rows as the insert's JSON parameter, UTF-8: an array of arrays (`text()` reads it). */
  bytes: Uint8Array
  count: number
  /** The midnights (epoch ms) of the days its rows fall on: PostgreSQL's partitions. */
  days: number[]
}

export interface LogWriterOptions {
  mode: LogMode
  /** The most rows held unwritten: past it a row is dropped (and counted), never the request. */
  capacity: number
  /** Rows per write (and a full one is written at once, not at the next tick). */
  batch: number
  /** This process's part of each row's id (`<instance><counter>`: the cursor's tie-break). */
  instance: string
  /** Writes a batch (one statement or transaction); throws when the database is away. */
  write(batch: LogBatch): Promise<void>
  /** A write failed (once a flush, its error). */
  onError?(err: unknown): void
}

/** Where each row is sent besides the database (OTLP logs: docs/telemetry.md); never waited for. */
export type Forward = (row: VerificationRow) => void

/** A counter in base 36, padded: the ids of one process sort as they were made. */
const idOf = (n: number) => n.toString(36).padStart(11, '0')

/**
 * The verification log's buffer (docs/verifications.md). On the hot path a row becomes its JSON
 * text at once, appended to the open batch's buffer (no promise, no I/O, nothing left on the
 * heap); batches are written off it, every `start` interval or as soon as one is full.
 * Bounded: a row that finds `capacity` rows unwritten (held or being written) is dropped and
 * counted in `dropped`, exactly. A batch the database refuses is kept, in order, for the next
 * flush; at `stop` what is still unwritten is counted as dropped.
 */
export class VerificationLog {
  readonly mode: LogMode
  /** Rows dropped unwritten since start: the buffer was full, or unwritten at stop. */
  dropped = 0
  /** Rows written since start. */
  written = 0
  /** Rows not written yet: in the open batch, in sealed ones, in the one being written. */
  private unwritten = 0
  private n = 0
  /** The open batch: its rows' text, written as they come (nothing on the heap to keep). */
  private open = Buffer.allocUnsafeSlow(openBytes)
  private openLength = 0
  private openCount = 0
  private openDays: number[] = []
  private sealed: LogBatch[] = []
  private timer: NodeJS.Timeout | undefined
  private soon = false
  private flushing: Promise<void> | undefined
  private stopped = true
  private forward: Forward | undefined

  constructor(private readonly o: LogWriterOptions) {
    this.mode = o.mode
  }

  /**
   * Sends every row on as well, as it is made: with `refused`, the valid rows too, which only
   * go there (a columnar store takes every verification, the database the refusals).
   */
  forwardTo(forward: Forward): void {
    this.forward = forward
  }

  /** The verification of this outcome (an index of `outcomes`) makes a row: stored, or sent on. */
  keeps(outcome: number): boolean {
    return this.forward !== undefined || this.stores(outcomes[outcome])
  }

  /** The database keeps the rows of this outcome (`refused` leaves out the valid ones). */
  private stores(outcome: string | undefined): boolean {
    if (this.mode === 'refused') return outcome !== 'valid'
    return this.mode === 'all'
  }

  /** Rows waiting to be written. */
  get pending(): number {
    return this.unwritten
  }

  add(row: VerificationRow): void {
    this.forward?.(row)
    if (!this.stores(row.outcome)) return
    if (this.unwritten >= this.o.capacity) {
      this.dropped++
      return
    }
    const text = rowText(row, `${this.o.instance}${idOf(++this.n)}`)
    // At most 3 bytes a UTF-16 unit, and the ',' or '[' before it and the ']' after.
    const room = 3 * text.length + 2
    if (room > this.open.length) {
      // Not a row a source makes (their fields are bounded): dropped, not a batch spoiled.
      this.dropped++
      return
    }
    if (this.openLength + room > this.open.length) this.seal()
    this.unwritten++
    const day = row.at - (row.at % dayMs)
    if (this.openDays[this.openDays.length - 1] !== day && !this.openDays.includes(day)) {
      this.openDays.push(day)
    }
    this.open[this.openLength++] = this.openCount++ === 0 ? 91 : 44
    this.openLength += this.open.write(text, this.openLength)
    if (this.openCount >= this.o.batch) {
      this.seal()
      if (!this.soon && !this.stopped) {
        this.soon = true
        setImmediate(() => {
          this.soon = false
          void this.flush()
        })
      }
    }
  }

  private seal() {
    if (this.openCount === 0) return
    this.open[this.openLength++] = 93
    const bytes = this.open.subarray(0, this.openLength)
    this.sealed.push({ bytes, count: this.openCount, days: this.openDays })
    this.open = Buffer.allocUnsafeSlow(openBytes)
    this.openLength = 0
    this.openCount = 0
    this.openDays = []
  }

  /** Writes every row held now, batch by batch; a flush already running is waited for first. */
  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing
    this.seal()
    if (this.sealed.length === 0) return
    this.flushing = this.writeAll().finally(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  private async writeAll() {
    while (this.sealed.length > 0) {
      const batch = this.sealed[0] as LogBatch
      try {
        await this.o.write(batch)
      } catch (err) {
        // Kept at the front, in order, for the next flush (it counts against the bound).
        this.o.onError?.(err)
        return
      }
      this.sealed.shift()
      this.unwritten -= batch.count
      this.written += batch.count
    }
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
    this.dropped += this.unwritten
    this.unwritten = 0
    this.sealed = []
  }
}
