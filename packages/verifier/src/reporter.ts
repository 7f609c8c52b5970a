import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { RefusedLog, RefusedRow } from './refused-log.js'
import { TesseraUnreachableError, type Transport } from './transport.js'
import type { UsageCounter, UsageRow } from './usage.js'

/** A lease's unspent credits, handed back to Tessera in a report. */
export interface ReturnedLease {
  account: string
  token?: string
  amount: number
  lease: string
}

interface Batch {
  readonly id: string
  readonly counts: UsageRow[]
  readonly returned: ReturnedLease[]
  /** Refused decisions, one row each (sent again, the same, with the batch). */
  readonly refused: RefusedRow[]
  /** The returned leases of a refused batch, sent again alone (once). */
  readonly again?: true
}

export interface ReporterStats {
  /** Count rows waiting to be reported (cut into batches or still open). */
  pendingRows: number
  /** Batches waiting for Tessera's 200. */
  pendingBatches: number
  /** Count rows dropped, the oldest first, because more than maxPendingRows were waiting. */
  droppedRows: number
  /** Batches Tessera answered 200 (counted now, or already counted before). */
  batchesSent: number
  /** Report requests that failed (each is sent again, with its id). */
  failedReports: number
  /** Refused decisions whose row was dropped (their counts are kept; see RefusedLog). */
  refusedDropped: number
}

export const reportPath = '/admin/v1/usage/reports'
/** Tessera takes at most this many count rows, and as many returned leases, per report. */
const maxBatchRows = 10_000
/** Tessera takes at most this many refused rows per report. */
const maxBatchRefused = 1_000
const idShape = /[^A-Za-z0-9._:-]/g

/** A reporter name of Tessera's alphabet: the host, the process and a random part. */
export function defaultReporter(): string {
  const host = hostname().replace(idShape, '-').slice(0, 40) || 'host'
  return `${host}:${process.pid}:${randomBytes(6).toString('hex')}`
}

/** A refusal that sending again cannot change (the batch is then dropped, and said so). */
const permanent = (err: unknown) =>
  err instanceof TesseraUnreachableError &&
  err.status !== undefined &&
  err.status >= 400 &&
  err.status < 500 &&
  ![401, 403, 408, 429].includes(err.status)

/**
 * Cuts counts (and leases to return) into batches and sends them to `POST /admin/v1/usage/reports`
 * in order, one at a time. A batch keeps its id until Tessera answers 200, so a batch whose
 * answer was lost is sent again and counted once; what comes meanwhile goes to later batches.
 * Batch ids are `<random>:<n>`, the random part drawn for each reporter object: a restarted
 * process (or another verifier of the same `reporter` name) never repeats an earlier id, which
 * Tessera would answer `{"counted":false}`.
 */
export class Reporter {
  readonly reporter: string
  private readonly queue: Batch[] = []
  private returned: ReturnedLease[] = []
  private sending: Promise<void> | undefined
  private inFlight: Batch | undefined
  private seq = 0
  /** Makes batch ids unique per process: `seq` starts at 1 again after a restart. */
  private readonly idPrefix = randomBytes(6).toString('base64url')
  private queuedRows = 0
  private queuedRefused = 0
  private droppedRows = 0
  private batchesSent = 0
  private failedReports = 0

  constructor(
    private readonly transport: Transport,
    private readonly counter: UsageCounter,
    private readonly log: RefusedLog,
    private readonly maxPendingRows: number,
    private readonly onError: (err: Error) => void,
    reporter: string | undefined,
  ) {
    if (reporter !== undefined && !/^[A-Za-z0-9._:-]{1,64}$/.test(reporter)) {
      throw new TypeError('reporter must be 1 to 64 characters of A-Z a-z 0-9 . _ : -')
    }
    this.reporter = reporter ?? defaultReporter()
  }

  stats(): ReporterStats {
    return {
      pendingRows: this.queuedRows + this.counter.openRows,
      pendingBatches: this.queue.length,
      droppedRows: this.droppedRows,
      batchesSent: this.batchesSent,
      failedReports: this.failedReports,
      refusedDropped: this.log.dropped,
    }
  }

  /** Leases are waiting to be handed back. */
  get returning(): boolean {
    return this.returned.length > 0
  }

  /** Hands a lease's unspent credits back with the next report. */
  giveBack(lease: ReturnedLease): void {
    this.returned.push(lease)
  }

  /**
   * Room for one more open row within maxPendingRows (open and queued rows together): if there
   * is none, the open rows are cut and the oldest queued ones dropped. False when no room can be
   * made (the batch on its way holds it all): the new row is dropped, and counted as such.
   */
  room(): boolean {
    if (this.queuedRows + this.counter.openRows < this.maxPendingRows) return true
    this.cut(1)
    if (this.queuedRows + this.counter.openRows < this.maxPendingRows) return true
    this.droppedRows++
    return false
  }

  /**
   * Takes the counts so far (and leases to return, and refused rows) into new batches, each
   * within Tessera's limits, then bounds the queue to maxPendingRows less `keep` count rows (and
   * maxPendingRows refused rows).
   */
  cut(keep = 0): void {
    const rows = this.counter.take()
    const returned = this.returned
    this.returned = []
    const refused = this.log.take()
    const n = Math.max(
      Math.ceil(rows.length / maxBatchRows),
      Math.ceil(returned.length / maxBatchRows),
      Math.ceil(refused.length / maxBatchRefused),
    )
    for (let i = 0; i < n; i++) {
      const counts = rows.slice(i * maxBatchRows, (i + 1) * maxBatchRows)
      const batch: Batch = {
        id: this.nextId(),
        counts,
        returned: returned.slice(i * maxBatchRows, (i + 1) * maxBatchRows),
        refused: refused.slice(i * maxBatchRefused, (i + 1) * maxBatchRefused),
      }
      this.queue.push(batch)
      this.queuedRows += counts.length
      this.queuedRefused += batch.refused.length
    }
    this.bound(keep)
    this.boundRefused()
  }

  /** Cuts and sends everything queued, in order; stops at the first failure (kept for later). */
  report(): Promise<void> {
    this.cut()
    return this.flush()
  }

  flush(): Promise<void> {
    this.sending ??= this.sendAll().finally(() => {
      this.sending = undefined
    })
    return this.sending
  }

  private async sendAll(): Promise<void> {
    for (let batch = this.queue[0]; batch !== undefined; batch = this.queue[0]) {
      this.inFlight = batch
      try {
        await this.transport.postJson(reportPath, {
          reporter: this.reporter,
          batch: batch.id,
          counts: batch.counts,
          returned: batch.returned,
          // Only when there are some: the wire format is as before otherwise.
          ...(batch.refused.length === 0 ? {} : { refused: batch.refused }),
        })
        this.batchesSent++
      } catch (err) {
        this.failedReports++
        this.onError(err as Error)
        if (!permanent(err)) return
        // A Tessera before the verification log refuses the field: its counts go again without.
        if (this.withoutRows(batch) && !empty(batch)) continue
        this.refused(batch)
      } finally {
        this.inFlight = undefined
      }
      if (this.queue[0] === batch) {
        this.queue.shift()
        this.queuedRows -= batch.counts.length
        this.queuedRefused -= batch.refused.length
      }
    }
  }

  /** Drops a refused batch's rows, to send it again (its id unused: nothing was recorded). */
  private withoutRows(batch: Batch): boolean {
    const n = batch.refused.length
    if (n === 0) return false
    batch.refused.splice(0)
    this.queuedRefused -= n
    this.log.dropped += n
    return true
  }

  /**
   * A batch refused for good is dropped; its returned leases are sent again alone, next (once:
   * refused again, they are dropped and said through onError).
   */
  private refused(batch: Batch): void {
    this.log.dropped += batch.refused.length
    if (batch.returned.length === 0) return
    if (batch.again) {
      const credits = batch.returned.reduce((n, r) => n + r.amount, 0)
      this.onError(
        new Error(`${batch.returned.length} returned leases (${credits} credits) were dropped`),
      )
      return
    }
    const alone: Batch = {
      id: this.nextId(),
      counts: [],
      returned: batch.returned,
      refused: [],
      again: true,
    }
    this.queue.splice(this.queue[0] === batch ? 1 : 0, 0, alone)
  }

  private nextId(): string {
    return `${this.idPrefix}:${++this.seq}`
  }

  /** Drops the oldest rows past maxPendingRows less `keep` (never from the batch on its way). */
  private bound(keep: number): void {
    let excess = this.queuedRows - (this.maxPendingRows - keep)
    let i = 0
    while (excess > 0 && i < this.queue.length) {
      const batch = this.queue[i] as Batch
      if (batch === this.inFlight) {
        i++
        continue
      }
      const n = Math.min(excess, batch.counts.length)
      batch.counts.splice(0, n)
      excess -= n
      this.queuedRows -= n
      this.droppedRows += n
      if (empty(batch)) this.queue.splice(i, 1)
      else i++
    }
  }

  /** Drops the oldest refused rows past maxPendingRows (never from the batch on its way). */
  private boundRefused(): void {
    let excess = this.queuedRefused - this.maxPendingRows
    for (let i = 0; excess > 0 && i < this.queue.length; ) {
      const batch = this.queue[i] as Batch
      const n = batch === this.inFlight ? 0 : Math.min(excess, batch.refused.length)
      batch.refused.splice(0, n)
      excess -= n
      this.queuedRefused -= n
      this.log.dropped += n
      if (n > 0 && empty(batch)) this.queue.splice(i, 1)
      else i++
    }
  }
}

const empty = (batch: Batch) =>
  batch.counts.length === 0 && batch.returned.length === 0 && batch.refused.length === 0
