import type { Logger } from 'pino'
import type { TokenHygiene } from './hygiene/hygiene.js'
import type { TokenService } from './tokens/service.js'

/** How often retention pruning runs. */
export const pruneEveryMs = 3_600_000

/** A background job: what it does, how often, and what its failure is logged as. */
export interface Job {
  run: () => Promise<unknown>
  everyMs: number
  /** The first run this long after start, besides the interval (none if absent). */
  firstAfterMs?: number
  failure: string
}

/**
 * Runs each job on its interval while the database is ready; a failure is logged, and the next
 * run tries again. The timers do not keep the process alive.
 */
export function startJobs(log: Logger, ready: () => boolean, jobs: Job[]): NodeJS.Timeout[] {
  const timers: NodeJS.Timeout[] = []
  for (const job of jobs) {
    const run = () => {
      if (!ready()) return
      job.run().catch((err) => log.warn({ err: (err as Error).message }, job.failure))
    }
    const timer = setInterval(run, job.everyMs)
    timer.unref()
    timers.push(timer)
    if (job.firstAfterMs !== undefined) {
      const first = setTimeout(run, job.firstAfterMs)
      first.unref()
      timers.push(first)
    }
  }
  return timers
}

/**
 * Pruning hourly (and shortly after start); rolled tokens past their end swept every 30 s (they
 * are refused already: gone from lists within half a minute); warnings before ends every
 * minute; idle tokens hourly.
 */
export function backgroundJobs(
  prune: () => Promise<number>,
  tokens: TokenService,
  hygiene: TokenHygiene,
): Job[] {
  return [
    {
      run: prune,
      everyMs: pruneEveryMs,
      firstAfterMs: 10_000,
      failure: 'audit and usage pruning failed',
    },
    { run: () => tokens.sweepRetired(), everyMs: 30_000, failure: 'rolled token sweep failed' },
    { run: () => hygiene.sweep(), everyMs: 60_000, failure: 'token warnings failed' },
    {
      run: () => hygiene.sweepIdle(),
      everyMs: pruneEveryMs,
      firstAfterMs: 60_000,
      failure: 'idle token sweep failed',
    },
  ]
}
