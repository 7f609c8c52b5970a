import { performance } from 'node:perf_hooks'

/** Re-read the wall clock this often: the monotonic clock drifts from it (NTP slews). */
const reanchorMs = 60_000

/**
 * Epoch nanoseconds of `performance.now()` readings: the service's clock (`now`, epoch ms) read
 * once a minute, plus the monotonic clock's sub-millisecond delta since. A span's start and end
 * are two readings of one monotonic clock, so its duration is exact whatever the wall clock does.
 */
export function nanoClock(now: () => number, perf: () => number = () => performance.now()) {
  let anchorNs = 0n
  let anchorPerf = Number.NEGATIVE_INFINITY
  const anchor = () => {
    anchorPerf = perf()
    anchorNs = BigInt(Math.round(now() * 1000)) * 1000n
  }
  /** Epoch ns of the reading `at` (a `performance.now()`), of the present when none is given. */
  return (at?: number): bigint => {
    const reading = at ?? perf()
    if (reading - anchorPerf >= reanchorMs) anchor()
    return anchorNs + BigInt(Math.round((reading - anchorPerf) * 1e6))
  }
}

export type NanoClock = ReturnType<typeof nanoClock>

/** Epoch ms as epoch ns. */
export const msToNs = (ms: number) => BigInt(Math.round(ms * 1000)) * 1000n
