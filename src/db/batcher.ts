import { isUnavailable } from './database.js'

/** Where a Batcher reports its group commits (for /metrics): each batch's size, failed writes. */
export interface GroupCommitStats {
  sizes: { observe(size: number): void }
  failures: number
}

/** For a Batcher whose figures nobody reads. */
const unread = (): GroupCommitStats => ({ sizes: { observe() {} }, failures: 0 })

/**
 * Group commit: items are written together, in one statement and one transaction. At most
 * `depth` writes are out at a time (1 unless the write is pipelined, see PipelinedStatement);
 * items added meanwhile (while the event loop was busy, or while the writes were out, a round
 * trip on PostgreSQL) make the next batch. Each caller's promise settles when its own item is
 * durable (or failed). A failing batch is retried item by item, so that one bad item fails only
 * its own caller, unless the database is away.
 */
export class Batcher<T> {
  private pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = []
  private writing = 0
  private scheduled = false

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly max = 500,
    private readonly depth = 1,
    private readonly stats: GroupCommitStats = unread(),
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject })
      this.schedule()
    })
  }

  private schedule() {
    if (this.scheduled || this.writing >= this.depth || this.pending.length === 0) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.flush()
    })
  }

  private async flush() {
    this.writing++
    const batch = this.pending.splice(0, this.max)
    this.stats.sizes.observe(batch.length)
    try {
      await this.write(batch.map((b) => b.item))
      for (const b of batch) b.resolve()
    } catch (err) {
      this.stats.failures++
      // The database away (or a write out too long): every item would fail the same way, after
      // the same wait, and a pipelined write's outcome is unknown (PostgreSQL may still commit
      // it): retrying its items could only find them written. All fail with the error (503).
      if (batch.length === 1 || isUnavailable(err)) for (const b of batch) b.reject(err)
      else {
        for (const b of batch) {
          await this.write([b.item]).then(b.resolve, (e) => {
            this.stats.failures++
            b.reject(e)
          })
        }
      }
    } finally {
      this.writing--
      this.schedule()
    }
  }
}
