/**
 * `rate_limited` by limit name per meter key: a key's names are its account's and token's
 * limits (some 150 at most), and only refusals by a limit have them.
 */
export type LimitedByKey = Map<string, Map<string, number>>

/** Counts by outcome per meter key (`meterKey`) in one calendar minute (its start, epoch ms). */
export interface Window {
  minute: number
  counts: Map<string, number[]>
  /** The split of the counts' rate_limited by limit name, where any. */
  limited?: LimitedByKey
}

/** Two splits as one: `into` with `from`'s names added (either may be absent). */
export function joinLimited(into?: LimitedByKey, from?: LimitedByKey): LimitedByKey | undefined {
  if (into === undefined || from === undefined) return into ?? from
  for (const [key, names] of from) {
    const seen = into.get(key)
    if (seen === undefined) into.set(key, names)
    else for (const [name, n] of names) seen.set(name, (seen.get(name) ?? 0) + n)
  }
  return into
}

/** Verifications a window counts (every outcome). */
export function verificationsOf(counts: Map<string, number[]>): number {
  let n = 0
  for (const c of counts.values()) for (const v of c) n += v
  return n
}

/**
 * Counts waiting to be written, one window per minute: counts of a minute that comes again (a
 * later flush within the same minute, a write that failed, a worker's hand-over) are added to
 * its window. Bounded: past `max` the oldest window goes, counted in `dropped`.
 */
export class PendingWindows {
  private windows: Window[] = []
  private keys = 0
  /** The most kept (a database away for two hours); past it the oldest go. */
  max = { windows: 120, keys: 1_000_000 }
  /** Windows (and their keys) dropped unwritten past `max`, since start. */
  readonly dropped = { windows: 0, keys: 0 }
  /** A window dropped past `max`: its minute, its keys and its verifications. */
  onDrop: (minute: number, keys: number, verifications: number) => void = () => {}

  get size(): number {
    return this.windows.length
  }

  /** Adds a minute's counts (and their split by name); they are the window's from then on
   * when its minute is new. */
  add(minute: number, counts: Map<string, number[]>, limited?: LimitedByKey): void {
    if (counts.size === 0) return
    const window = this.windows.findLast((w) => w.minute === minute)
    if (window === undefined) {
      this.windows.push(limited === undefined ? { minute, counts } : { minute, counts, limited })
      this.keys += counts.size
    } else {
      const joined = joinLimited(window.limited, limited)
      if (joined !== undefined) window.limited = joined
      for (const [key, c] of counts) {
        const into = window.counts.get(key)
        if (into === undefined) {
          window.counts.set(key, c)
          this.keys++
        } else for (let i = 0; i < c.length; i++) into[i] = (into[i] ?? 0) + (c[i] as number)
      }
    }
    this.bound()
  }

  /** Every window, oldest first; none are left. */
  take(): Window[] {
    const windows = this.windows
    this.windows = []
    this.keys = 0
    return windows
  }

  /** Windows taken and not written: before any added since (the same minutes merged). */
  putBack(failed: Window[]): void {
    const later = this.take()
    for (const w of [...failed, ...later]) this.add(w.minute, w.counts, w.limited)
  }

  private bound() {
    while (this.windows.length > this.max.windows || this.keys > this.max.keys) {
      const w = this.windows.shift() as Window
      this.keys -= w.counts.size
      this.dropped.windows++
      this.dropped.keys += w.counts.size
      this.onDrop(w.minute, w.counts.size, verificationsOf(w.counts))
    }
  }
}
