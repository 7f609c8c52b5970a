import { Buckets } from './histogram.js'

/** Seconds: from a cached retrieve (well under a millisecond) to a slow page of a large list. */
const durationBounds = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]

/** The route label of a request that no route matched: a fixed value, never the URL. */
export const unmatched = 'unmatched'

class Series {
  readonly statuses = new Map<number, number>()
  readonly durations = new Buckets(durationBounds)
}

/**
 * Requests by route pattern, method and status, with their durations. Every label is bounded:
 * patterns are the routes' own, methods those Node parses, statuses those the app sends.
 */
export class RequestStats {
  /** A pattern is the same string on every request, so its hash is computed once. */
  private readonly routes = new Map<string, Map<string, Series>>()

  observe(method: string, route: string | undefined, status: number, ms: number): void {
    const pattern = route ?? unmatched
    let byMethod = this.routes.get(pattern)
    if (byMethod === undefined) {
      byMethod = new Map()
      this.routes.set(pattern, byMethod)
    }
    let series = byMethod.get(method)
    if (series === undefined) {
      series = new Series()
      byMethod.set(method, series)
    }
    series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1)
    series.durations.observe(ms / 1000)
  }

  *counts(): Generator<[Record<string, string>, number]> {
    for (const [route, byMethod] of this.routes) {
      for (const [method, series] of byMethod) {
        for (const [status, n] of series.statuses) {
          yield [{ method, route, status: String(status) }, n]
        }
      }
    }
  }

  *durations(): Generator<[Record<string, string>, Buckets]> {
    for (const [route, byMethod] of this.routes) {
      for (const [method, series] of byMethod) yield [{ method, route }, series.durations]
    }
  }
}
