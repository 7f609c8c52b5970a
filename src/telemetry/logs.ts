import { msToNs } from './clock.js'
import type { AttributeValue } from './schema.js'
import { keyValues } from './schema.js'

/**
 * A row of the verification log (src/verification/log.ts), as far as the export reads it:
 * declared here so that the telemetry imports nothing of the domain.
 */
export interface VerificationRow {
  /** Epoch ms. */
  at: number
  account: string
  tokenId: string
  source: 'retrieve' | 'api' | 'introspection' | 'verifier'
  outcome: string
  /** The limit's name, for `rate_limited`. */
  limit: string | null
  ip: string | null
  /** The Origin (or Referer) host. */
  origin: string | null
  requestId: string | null
  durationUs: number | null
}

const info = { severityNumber: 9, severityText: 'INFO' }
const warn = { severityNumber: 13, severityText: 'WARN' }
const body = { stringValue: 'verification' }

/**
 * A row as an OTLP LogRecord: INFO for a valid verification, WARN for a refusal; the row's
 * fields as attributes, those it does not have left out.
 */
export function logRecordOf(row: VerificationRow, observedNs: bigint) {
  const attributes: [string, AttributeValue][] = [
    ['tessera.account', row.account],
    ['tessera.token_id', row.tokenId],
    ['tessera.source', row.source],
    ['tessera.outcome', row.outcome],
  ]
  if (row.limit !== null) attributes.push(['tessera.limit', row.limit])
  if (row.ip !== null) attributes.push(['client.address', row.ip])
  if (row.origin !== null) attributes.push(['tessera.origin', row.origin])
  if (row.requestId !== null) attributes.push(['tessera.request_id', row.requestId])
  if (row.durationUs !== null) attributes.push(['tessera.duration_us', row.durationUs])
  return {
    timeUnixNano: msToNs(row.at),
    observedTimeUnixNano: observedNs,
    ...(row.outcome === 'valid' ? info : warn),
    body,
    attributes: keyValues(attributes),
  }
}
