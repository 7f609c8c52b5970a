import type { VerifyOptions } from './answers.js'
import { type Outcome, outcomes, rateLimited } from './outcomes.js'
import type { MeterKey } from './usage.js'

/**
 * A refused decision as a report carries it, a row of Tessera's verification log (its
 * `POST /admin/v1/usage/reports` `refused`). Optional fields are left out when unknown, or
 * when their value is not of the shape Tessera takes (a batch with one bad row is refused whole).
 */
export interface RefusedRow {
  /** When it was decided, ISO 8601 (ms). */
  at: string
  /** Whom it is counted against, as its counts are: '' and '' for nobody. */
  account: string
  token: string
  outcome: Exclude<Outcome, 'valid'>
  /** rate_limited: the name of the limit that refused. */
  limit?: string
  /** The client's address the request gave (VerifyOptions.ip). */
  ip?: string
  /** The host (and port) of the request's Origin, else of its Referer, lowercase. */
  origin?: string
  /** The request's id (VerifyOptions.requestId: an X-Request-Id). */
  request_id?: string
  /** From the verification's start to its decision, in microseconds. */
  duration_us?: number
}

/** The shapes Tessera's schema takes (src/http/admin/usage-schemas.ts). */
const ipShape = /^[0-9A-Fa-f.:]{2,64}$/
const hostShape = /^[A-Za-z0-9.:[\]_-]{1,255}$/
const idShape = /^[A-Za-z0-9._:-]{1,64}$/
const limitShape = /^[a-z0-9][a-z0-9._-]{0,63}$/
const maxDurationUs = 3_600_000_000
const malformed = outcomes.indexOf('malformed')
const invalid = outcomes.indexOf('invalid')

/**
 * The host of a URL-ish header value (`https://app.example.com:8443/page` →
 * `app.example.com:8443`), lowercase; undefined for `null` or what is not one. The same as
 * Tessera's own (src/verification/log.ts): this package is published on its own.
 */
export function hostOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  const scheme = value.indexOf('://')
  if (scheme <= 0 || scheme > 10) return undefined
  let end = value.length
  for (let i = scheme + 3; i < value.length; i++) {
    const c = value.charCodeAt(i)
    // '/', '?', '#'
    if (c === 47 || c === 63 || c === 35) {
      end = i
      break
    }
  }
  let host = value.slice(scheme + 3, end)
  const at = host.lastIndexOf('@')
  if (at !== -1) host = host.slice(at + 1)
  return hostShape.test(host) ? host.toLowerCase() : undefined
}

/**
 * The refused decisions of one report interval, as rows: at most `max` between two cuts; past
 * it a refusal is only counted (as every decision is) and its row dropped, counted in `dropped`.
 * Nothing is built for a row that finds no room.
 */
export class RefusedLog {
  private rows: RefusedRow[] = []
  /** Rows dropped: past the bound, trimmed from batches waiting, or in a batch refused for good. */
  dropped = 0

  constructor(
    readonly enabled: boolean,
    private readonly max: number,
  ) {}

  /** A row would be kept now: only then is a synchronous decision timed. */
  get open(): boolean {
    return this.enabled && this.rows.length < this.max
  }

  /**
   * Keeps the row of a refused decision (outcome: its index in `outcomes`, 1 or more) decided at
   * `at` (epoch ms), its verification started at `started` (performance.now(); undefined: not
   * timed, decided at once from the cache, well under the row's microsecond: 0).
   */
  add(
    key: MeterKey,
    outcome: number,
    at: number,
    options: VerifyOptions | undefined,
    started: number | undefined,
    limit: string | undefined,
  ): void {
    if (!this.enabled || outcome <= 0) return
    if (this.rows.length >= this.max) {
      this.dropped++
      return
    }
    const us = started === undefined ? 0 : Math.round((performance.now() - started) * 1000)
    // A malformed or invalid string names nobody, whatever answer it replaced (Tessera's rule).
    const nobody = outcome === malformed || outcome === invalid
    const row: RefusedRow = {
      at: new Date(at).toISOString(),
      account: nobody ? '' : key.account,
      token: nobody ? '' : key.token,
      outcome: outcomes[outcome] as RefusedRow['outcome'],
      duration_us: Math.min(Math.max(us, 0), maxDurationUs),
    }
    if (outcome === rateLimited && limit !== undefined && limitShape.test(limit)) row.limit = limit
    if (options !== undefined) {
      const { ip, requestId } = options
      if (ip !== undefined && ipShape.test(ip)) row.ip = ip
      const origin = hostOf(options.origin) ?? hostOf(options.referer)
      if (origin !== undefined) row.origin = origin
      if (requestId !== undefined && idShape.test(requestId)) row.request_id = requestId
    }
    this.rows.push(row)
  }

  /** The rows so far; the next interval starts empty. */
  take(): RefusedRow[] {
    const rows = this.rows
    this.rows = []
    return rows
  }
}
