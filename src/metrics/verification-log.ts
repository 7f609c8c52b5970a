import type { Registry } from 'prom-client'
import { readers } from './metrics.js'

/** What the verification log's buffer tells (src/verification/log-writer.ts). */
interface LogFigures {
  readonly written: number
  readonly dropped: number
  readonly pending: number
}

/**
 * `tessera_verification_log_rows_total{result}`: rows written, and dropped unwritten (the
 * buffer full, or a database away past it), exactly; `tessera_verification_log_pending`.
 */
export function registerVerificationLog(registry: Registry, log: LogFigures) {
  const { counter, gauge } = readers(registry)
  counter(
    'tessera_verification_log_rows_total',
    'Rows of the verification log, by result: written, or dropped unwritten (buffer full)',
    ['result'],
    () => [
      [{ result: 'written' }, log.written],
      [{ result: 'dropped' }, log.dropped],
    ],
  )
  gauge(
    'tessera_verification_log_pending',
    'Rows of the verification log held in memory, not yet written',
    () => log.pending,
  )
}
