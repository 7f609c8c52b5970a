import { type Outcome, outcomes, rateLimited } from './outcomes.js'

/** One row of a report: an account's (and token's) counts by outcome in one minute. */
export interface UsageRow {
  /** The minute's start, ISO 8601. */
  minute: string
  account: string
  /** The token id; '' for a tk, and for what names no token (malformed, invalid strings). */
  token: string
  outcomes: Partial<Record<Outcome, number>>
  /** `rate_limited` split by the name of the limit that refused; absent when none was. */
  rate_limited_by?: Record<string, number>
}

/** Counts of one key in one minute, until the next cut takes them. */
export interface OpenRow {
  readonly key: MeterKey
  readonly start: number
  /** The minute's end; 0 once the row is cut into a report (then counting opens a new one). */
  end: number
  readonly counts: Float64Array
  /** Its rate_limited decisions by the name of the limit that refused (made at the first). */
  limited: Map<string, number> | undefined
}

/**
 * Who a decision is charged to, built once per cached answer: counting compares a number and
 * increments an array cell, and builds no string.
 */
export class MeterKey {
  /** The row this key counts into (if it is still the current minute and batch). */
  row: OpenRow | undefined = undefined
  constructor(
    readonly account: string,
    readonly token: string,
  ) {}
}

const minuteMs = 60_000

/**
 * The counts not yet cut into a report, by key and minute. `take()` merges them into rows (keys
 * of the same account and token count together) and closes the rows it took.
 */
export class UsageCounter {
  private open: OpenRow[] = []
  private readonly keys = new Map<string, MeterKey>()

  /**
   * `room` is asked before a row opens (false: there is none, the decision is not counted);
   * `maxKeys` bounds the keys shared between answers (past it they start over, which only costs
   * merging).
   */
  constructor(
    readonly enabled: boolean,
    private readonly maxKeys: number,
    private readonly room: () => boolean,
  ) {}

  get openRows(): number {
    return this.open.length
  }

  /** The key of an account and token id, shared by the answers that name them. */
  key(account: string, token: string): MeterKey {
    const name = `${account}\n${token}`
    let key = this.keys.get(name)
    if (key === undefined) {
      if (this.keys.size >= this.maxKeys) this.keys.clear()
      key = new MeterKey(account, token)
      this.keys.set(name, key)
    }
    return key
  }

  /** Counts one decision (outcome: its index in `outcomes`) at `now` (epoch ms). */
  count(key: MeterKey, outcome: number, now: number): void {
    const row = key.row
    if (row !== undefined && now < row.end) {
      row.counts[outcome] = (row.counts[outcome] as number) + 1
      return
    }
    if (!this.enabled || outcome < 0) return
    const opened = this.newRow(key, now)
    if (opened !== undefined) opened.counts[outcome] = 1
  }

  /** Counts one decision refused by the rate limit `name` (rate_limited, split by name). */
  countLimited(key: MeterKey, name: string, now: number): void {
    this.count(key, rateLimited, now)
    const row = key.row
    if (row === undefined || now >= row.end) return
    row.limited ??= new Map()
    row.limited.set(name, (row.limited.get(name) ?? 0) + 1)
  }

  /** Everything counted so far, merged into report rows; counting goes on into a new epoch. */
  take(): UsageRow[] {
    const open = this.open
    this.open = []
    for (const r of open) r.end = 0
    const merged = new Map<string, { row: UsageRow; counts: Float64Array }>()
    for (const r of open) {
      const name = `${r.start}\n${r.key.account}\n${r.key.token}`
      const known = merged.get(name)
      if (known === undefined) {
        const row: UsageRow = {
          minute: new Date(r.start).toISOString(),
          account: r.key.account,
          token: r.key.token,
          outcomes: {},
        }
        merged.set(name, { row, counts: r.counts })
        if (r.limited !== undefined) row.rate_limited_by = Object.fromEntries(r.limited)
      } else {
        for (let i = 0; i < outcomes.length; i++) {
          known.counts[i] = (known.counts[i] as number) + (r.counts[i] as number)
        }
        for (const [limit, n] of r.limited ?? []) {
          known.row.rate_limited_by ??= {}
          known.row.rate_limited_by[limit] = (known.row.rate_limited_by[limit] ?? 0) + n
        }
      }
    }
    const rows: UsageRow[] = []
    for (const { row, counts } of merged.values()) {
      for (let i = 0; i < outcomes.length; i++) {
        const n = counts[i] as number
        if (n > 0) row.outcomes[outcomes[i] as Outcome] = n
      }
      rows.push(row)
    }
    return rows
  }

  private newRow(key: MeterKey, now: number): OpenRow | undefined {
    if (!this.room()) return undefined
    const start = now - (now % minuteMs)
    const row = {
      key,
      start,
      end: start + minuteMs,
      counts: new Float64Array(outcomes.length),
      limited: undefined,
    }
    key.row = row
    this.open.push(row)
    return row
  }
}
