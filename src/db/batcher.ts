/**
 * Group commit: items added while the event loop is busy are written together, in one
 * statement and one transaction, at the next turn. Each caller's promise settles when its own
 * item is durable (or failed). A failing batch is retried item by item, so that one bad item
 * fails only its own caller.
 */
export class Batcher<T> {
  private pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = []

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly max = 500,
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ item, resolve, reject }) === 1) setImmediate(() => this.flush())
    })
  }

  private async flush() {
    const batch = this.pending.splice(0, this.max)
    if (this.pending.length > 0) setImmediate(() => this.flush())
    try {
      await this.write(batch.map((b) => b.item))
      for (const b of batch) b.resolve()
    } catch (err) {
      if (batch.length === 1) return batch[0]?.reject(err)
      for (const b of batch) {
        await this.write([b.item]).then(b.resolve, b.reject)
      }
    }
  }
}
