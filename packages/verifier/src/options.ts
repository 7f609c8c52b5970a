import type { OtelApi } from './tracing.js'

export interface VerifierOptions {
  /** Tessera's base URL, e.g. `https://tessera.internal:8443`. */
  url: string
  /**
   * An operator key (`Authorization: Bearer` of the admin API) of the `verifier` scope
   * (`tessera admin-key create --scope verifier`): never a full one in an API's process.
   */
  adminKey: string
  /** PEM certificate(s) to trust instead of Node's default CAs (Tessera's generated one). */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>
  /**
   * How long cached answers keep serving once the event stream is down, counted from the last
   * moment it was known live; then the cache is dropped and every token is asked again (and
   * refused while Tessera cannot answer). Default 30,000 ms.
   */
  staleForMs?: number
  /** Most cached tokens; the oldest is dropped first. Default 10,000. */
  maxEntries?: number
  /** Longest a pk/sk answer is kept even without an event. Default 600,000 ms (10 minutes). */
  maxAgeMs?: number
  /** How long a refusal from Tessera (revoked, invalid...) is kept. Default 10,000 ms; 0: never. */
  negativeTtlMs?: number
  /** Introspection request timeout. Default 5,000 ms. */
  timeoutMs?: number
  /** After a failed introspection, answer TesseraUnavailable without asking for this long. Default 1,000 ms. */
  failFastMs?: number
  /** The event stream counts as dead after this long without a byte (Tessera pings every 15 s). Default 30,000 ms. */
  heartbeatTimeoutMs?: number
  /** Longest wait between reconnection attempts of the event stream. Default 10,000 ms. */
  maxRetryMs?: number
  /**
   * How often the counts of decisions (per account, token and minute, by outcome) are reported
   * to Tessera (`POST /admin/v1/usage/reports`). Default 10,000 ms; 0: nothing is counted.
   */
  reportEveryMs?: number
  /**
   * Most count rows waiting for Tessera, open and cut into batches together; past it the oldest
   * are dropped. Default 100,000.
   */
  maxPendingRows?: number
  /**
   * This verifier's name in its reports, for the operator (1-64 of `A-Za-z0-9._:-`), e.g.
   * `edge-1`: safe to keep across restarts, as batch ids are unique per process. Default
   * `<host>:<pid>:<random>`.
   */
  reporter?: string
  /**
   * Most refused decisions sent as rows (for Tessera's verification log) per report; past it
   * they are only counted, and `stats().refusedDropped` says how many rows were dropped.
   * Default 1,000; 0: none (counts only).
   */
  maxRefusedRows?: number
  /**
   * Adds a `tessera.verify` span to the caller's active trace when the application uses
   * OpenTelemetry (`@opentelemetry/api`, loaded if it is installed). Default true.
   */
  tracing?: boolean
  /**
   * The OpenTelemetry API to use instead of importing `@opentelemetry/api` (its `trace` and
   * `context`, e.g. `await import('@opentelemetry/api')`).
   */
  otel?: OtelApi
  /** The most credits one lease asks for (the first asks 10, later ones as fast as they go). Default 1,000. */
  maxLeaseCredits?: number
  /** Problems reaching Tessera (each new message once in a row). Default: process.emitWarning. */
  onError?: (err: Error) => void
}

export interface VerifierStats {
  entries: number
  /** The event stream is open. */
  streamLive: boolean
  /** Cached answers are being served (false before the stream first opens and once stale). */
  serving: boolean
  lastEventId: string
  /** Count rows waiting to be reported (cut into batches or still open). */
  pendingRows: number
  /** Report batches waiting for Tessera's 200. */
  pendingBatches: number
  /** Count rows dropped (the oldest first) because more than maxPendingRows were waiting. */
  droppedRows: number
  /** Report batches Tessera answered. */
  batchesSent: number
  /** Report requests that failed (the batch is sent again with the same id). */
  failedReports: number
  /** Refused decisions whose row was dropped (past maxRefusedRows, or while Tessera was away). */
  refusedDropped: number
  /** Credits held in leases, not yet spent. */
  creditsHeld: number
}

/** The defaults of every optional setting (see VerifierOptions). */
export const defaults = {
  staleForMs: 30_000,
  maxEntries: 10_000,
  maxAgeMs: 600_000,
  negativeTtlMs: 10_000,
  timeoutMs: 5_000,
  failFastMs: 1_000,
  heartbeatTimeoutMs: 30_000,
  maxRetryMs: 10_000,
  reportEveryMs: 10_000,
  maxPendingRows: 100_000,
  maxRefusedRows: 1_000,
  maxLeaseCredits: 1_000,
  firstLeaseCredits: 10,
  /** Verifications the first rate-limit lease of a token asks for; later ones follow its pace. */
  firstLeaseLimits: 10,
  /** The most verifications one rate-limit lease asks for. */
  maxLeaseLimits: 1_000,
}
