import { Buckets } from '../metrics/histogram.js'

/** Every group commit of the process, for /metrics: the size of each batch, and failed writes. */
export const groupCommits = {
  sizes: new Buckets([1, 2, 5, 10, 20, 50, 100, 200, 500]),
  failures: 0,
}

/**
 * Group commit: items are written together, in one statement and one transaction. One write is
 * out at a time; items added meanwhile (while the event loop was busy, or while the previous
 * write was out, a round trip on PostgreSQL) make the next batch. Each caller's promise settles
 * when its own item is durable (or failed). A failing batch is retried item by item, so that one
 * bad item fails only its own caller.
 */
export class Batcher<T> {
  private pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = []
  private writing = false

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly max = 500,
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ item, resolve, reject }) === 1 && !this.writing) {
        setImmediate(() => this.flush())
      }
    })
  }

  private async flush() {
    this.writing = true
    const batch = this.pending.splice(0, this.max)
    groupCommits.sizes.observe(batch.length)
    try {
      await this.write(batch.map((b) => b.item))
      for (const b of batch) b.resolve()
    } catch (err) {
      groupCommits.failures++
      if (batch.length === 1) batch[0]?.reject(err)
      else {
        for (const b of batch) {
          await this.write([b.item]).then(b.resolve, (e) => {
            groupCommits.failures++
            b.reject(e)
          })
        }
      }
    } finally {
      this.writing = false
      if (this.pending.length > 0) setImmediate(() => this.flush())
    }
  }
}
