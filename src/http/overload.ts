import { monitorEventLoopDelay } from 'node:perf_hooks'

/**
 * Load shedding. Past what the process can serve, requests queue in the event loop and every
 * answer is late; answering some at once with 503 and `Retry-After` keeps the others fast. The
 * signal is the event loop's delay (how late a timer fires), sampled over a short window: it
 * grows with the work waiting, whatever that work is. The request path reads one boolean.
 */
export class OverloadDetector {
  private overloaded = false
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 })
  private readonly timer: NodeJS.Timeout

  constructor(
    /** Shed while the mean delay of the last window is above this; 0 turns shedding off. */
    readonly maxDelayMs: number,
    windowMs = 500,
  ) {
    this.timer = setInterval(() => this.sample(), windowMs)
    this.timer.unref()
    if (maxDelayMs > 0) this.histogram.enable()
  }

  get shedding(): boolean {
    return this.overloaded
  }

  /** The mean delay of the last window, in milliseconds (for logs and tests). */
  lastDelayMs = 0

  private sample() {
    if (this.maxDelayMs <= 0) return
    // The histogram counts in nanoseconds, including the resolution's own 10 ms.
    const mean = this.histogram.count === 0 ? 0 : this.histogram.mean / 1e6
    this.lastDelayMs = Math.max(0, mean - 10)
    this.histogram.reset()
    this.overloaded = this.lastDelayMs > this.maxDelayMs
  }

  close() {
    clearInterval(this.timer)
    this.histogram.disable()
  }
}
