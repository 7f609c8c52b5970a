import type { Listening } from '../instance.js'

/**
 * What the primary and its workers say to each other over IPC (besides the rate limiter's
 * leases, src/ratelimit/cluster.ts, the sign-in attempts, src/ratelimit/attempts.ts, and the
 * usage counts handed over every second, src/usage/handover.ts). Every message carries
 * `tessera`, its kind.
 */
export type WorkerMessage =
  /** The worker listens: where (the banner says it once all do). */
  | { tessera: 'listening'; at: Listening }
  /** A load balancer asked this worker's /readyz at `at`: a drain then waits for it to see 503. */
  | { tessera: 'probed'; at: number }
  /** The worker's metrics (prom-client's JSON), for the primary's METRICS_PORT. */
  | { tessera: 'metrics'; id: number; json: unknown[] }
  /** The answer to a ping: this worker's event loop turns. */
  | { tessera: 'pong' }

export type PrimaryMessage =
  /** Shut down as one instance does (SIGTERM); `probedAt`: the last probe any worker saw. */
  | { tessera: 'drain'; probedAt: number }
  /** Send your metrics. */
  | { tessera: 'metrics'; id: number }
  /** Are you there? (see WORKER_TIMEOUT_SECONDS) */
  | { tessera: 'ping' }

/** A message of this protocol (IPC also carries Node's own `NODE_*` messages). */
export function isMessage<T extends { tessera: string }>(message: unknown): message is T {
  return typeof message === 'object' && message !== null && 'tessera' in message
}
