import type { Logger } from 'pino'

/** How often retention pruning runs. */
export const pruneEveryMs = 3_600_000

/** Pruning hourly (and once shortly after start), and the sweep of rolled tokens past their end. */
export function startJobs(
  log: Logger,
  ready: () => boolean,
  prune: () => Promise<number>,
  sweep: () => Promise<number>,
): NodeJS.Timeout[] {
  const run = () => {
    if (!ready()) return
    prune().catch((err) =>
      log.warn({ err: (err as Error).message }, 'audit and usage pruning failed'),
    )
  }
  const pruneTimer = setInterval(run, pruneEveryMs)
  pruneTimer.unref()
  // Rolled tokens past their end: refused already, gone from lists within half a minute.
  const sweepTimer = setInterval(() => {
    if (!ready()) return
    sweep().catch((err) => log.warn({ err: (err as Error).message }, 'rolled token sweep failed'))
  }, 30_000)
  sweepTimer.unref()
  setTimeout(run, 10_000).unref()
  return [pruneTimer, sweepTimer]
}
