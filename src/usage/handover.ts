import type { IpcChannel } from '../ratelimit/ipc.js'
import { outcomes } from './outcomes.js'
import type { LimitedByKey, Window } from './pending.js'

/** A worker's primary takes its usage counts this often (docs/metering.md). */
export const handoverMs = 1_000

/**
 * A worker's usage counts since its last hand-over, by minute: sent to its primary every
 * `handoverMs`, empty ones too (the primary then knows that nothing waits in the worker).
 */
export interface UsageHandover {
  tessera: 'usage'
  windows: {
    minute: number
    counts: [string, number[]][]
    /** rate_limited by limit name per key, where any: `[key, [[name, n], ...]]`. */
    limited?: [string, [string, number][]][]
  }[]
}

const isNamed = (n: unknown) =>
  Array.isArray(n) && n.length === 2 && typeof n[0] === 'string' && typeof n[1] === 'number'

const isLimited = (l: unknown) =>
  Array.isArray(l) &&
  l.length === 2 &&
  typeof l[0] === 'string' &&
  Array.isArray(l[1]) &&
  l[1].every(isNamed)

/** A hand-over's split as the meter keeps it. */
export const limitedOf = (
  limited: [string, [string, number][]][] | undefined,
): LimitedByKey | undefined =>
  limited === undefined ? undefined : new Map(limited.map(([key, names]) => [key, new Map(names)]))

const isCounts = (c: unknown) =>
  Array.isArray(c) &&
  c.length === 2 &&
  typeof c[0] === 'string' &&
  Array.isArray(c[1]) &&
  c[1].length === outcomes.length &&
  c[1].every((n) => typeof n === 'number')

/** Whether an IPC message is a worker's hand-over (the channel carries other messages too). */
export function isUsageHandover(m: unknown): m is UsageHandover {
  if (typeof m !== 'object' || m === null || (m as UsageHandover).tessera !== 'usage') return false
  const { windows } = m as UsageHandover
  return (
    Array.isArray(windows) &&
    windows.every(
      (w) =>
        typeof w?.minute === 'number' &&
        Array.isArray(w.counts) &&
        w.counts.every(isCounts) &&
        (w.limited === undefined || (Array.isArray(w.limited) && w.limited.every(isLimited))),
    )
  )
}

/** A worker's meter hands its windows to the primary while the channel is open. */
export function handOverTo(channel: IpcChannel): (windows: Window[]) => boolean {
  return (windows) => {
    if (!channel.connected || channel.send === undefined) return false
    const message: UsageHandover = {
      tessera: 'usage',
      windows: windows.map(({ minute, counts, limited }) =>
        limited === undefined
          ? { minute, counts: [...counts] }
          : {
              minute,
              counts: [...counts],
              limited: [...limited].map(([key, names]) => [key, [...names]]),
            },
      ),
    }
    channel.send(message)
    return true
  }
}
