import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { type OutboxEvent, outboxRepo } from '../db/outbox.js'
import type { Database } from '../db/schema.js'

/**
 * The events that follow `after` without a gap. A transaction rolled back leaves its sequence
 * numbers unused for good; on PostgreSQL the outbox lock (see `auditRepo.insert`) makes numbers
 * visible in order, so a gap is never a transaction still open. Still, what follows a gap waits
 * until the gap is filled or `waitMs` has passed since it was first seen: were numbers ever
 * taken outside that lock, a late commit would wait rather than be skipped. `gaps` remembers
 * when each gap was first seen, by the first missing number.
 */
export function contiguous(
  after: number,
  rows: OutboxEvent[],
  gaps: Map<number, number>,
  now: number,
  waitMs: number,
): OutboxEvent[] {
  for (const seq of gaps.keys()) if (seq <= after) gaps.delete(seq)
  const ready: OutboxEvent[] = []
  let expected = after + 1
  for (const row of rows) {
    if (row.seq > expected) {
      const seen = gaps.get(expected)
      if (seen === undefined) {
        gaps.set(expected, now)
        break
      }
      if (now - seen < waitMs) break
      gaps.delete(expected)
    }
    ready.push(row)
    expected = row.seq + 1
  }
  return ready
}

export interface FeedOptions {
  /** How often the outbox is read while someone listens. */
  pollMs?: number
  /** How long a gap in the sequence holds the events behind it (see `contiguous`). */
  gapWaitMs?: number
  now?: () => number
}

interface Listener {
  cursor: number
  deliver(events: OutboxEvent[]): void
}

const batch = 500

/**
 * The outbox, followed: listeners get every event after their position, in sequence order,
 * within `pollMs` of its commit. Listeners at the same position (every live one, once caught
 * up) share one query per poll; nothing is read while nobody listens.
 */
export class EventFeed {
  private readonly listeners = new Set<Listener>()
  private readonly gaps = new Map<number, number>()
  private readonly pollMs: number
  private readonly gapWaitMs: number
  private readonly now: () => number
  private timer: NodeJS.Timeout | undefined
  private polling = false
  private again = false
  private failing = false

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: Logger,
    options: FeedOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 100
    this.gapWaitMs = options.gapWaitMs ?? 250
    this.now = options.now ?? Date.now
  }

  newest(): Promise<number> {
    return outboxRepo.newest(this.db)
  }

  oldest(): Promise<number | undefined> {
    return outboxRepo.oldest(this.db)
  }

  /** Delivers every event after `after`, as it comes; answers the function that stops it. */
  subscribe(after: number, deliver: (events: OutboxEvent[]) => void): () => void {
    const listener: Listener = { cursor: after, deliver }
    this.listeners.add(listener)
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.poll(), this.pollMs)
      this.timer.unref()
    }
    this.poll()
    return () => {
      this.listeners.delete(listener)
      if (this.listeners.size === 0) this.stop()
    }
  }

  /** Stops polling and forgets every listener. */
  close(): void {
    this.listeners.clear()
    this.stop()
  }

  private stop() {
    clearInterval(this.timer)
    this.timer = undefined
  }

  private poll(): void {
    if (this.polling) {
      this.again = true
      return
    }
    this.polling = true
    this.readAll().then(
      (more) => {
        this.polling = false
        if (this.failing) this.log.info('the event outbox is readable again')
        this.failing = false
        if ((more || this.again) && this.listeners.size > 0) {
          this.again = false
          setImmediate(() => this.poll())
        }
      },
      (err) => {
        this.polling = false
        if (!this.failing) this.log.warn({ err }, 'cannot read the event outbox; retrying')
        this.failing = true
      },
    )
  }

  /** One read per distinct position; answers whether a full batch came (more may follow). */
  private async readAll(): Promise<boolean> {
    const byCursor = new Map<number, Listener[]>()
    for (const l of this.listeners) {
      const group = byCursor.get(l.cursor)
      if (group === undefined) byCursor.set(l.cursor, [l])
      else group.push(l)
    }
    let more = false
    for (const [cursor, group] of byCursor) {
      const rows = await outboxRepo.after(this.db, cursor, batch)
      const ready = contiguous(cursor, rows, this.gaps, this.now(), this.gapWaitMs)
      const last = ready.at(-1)
      if (last === undefined) continue
      if (rows.length === batch) more = true
      for (const l of group) {
        if (!this.listeners.has(l) || l.cursor !== cursor) continue
        l.cursor = last.seq
        l.deliver(ready)
      }
    }
    return more
  }
}
