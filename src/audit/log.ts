import type { AuditAction, AuditEvent } from './events.js'

export interface AuditFilter {
  /** One account's events; all when absent. */
  username?: string
  actions?: AuditAction[]
  /** ISO times: `since` inclusive, `until` exclusive. */
  since?: string
  until?: string
  /** Newest first: events strictly older than this event id. */
  before?: string
  limit: number
}

/**
 * Reading the audit log (the admin API, `tessera audit`, the dashboard's Activity page).
 * Events are written by the services, each in the transaction of its change. The query is
 * given (see context.ts), so that audit/ stays below db/, which stores its events.
 */
export class AuditLog {
  constructor(private readonly query: (filter: AuditFilter) => Promise<AuditEvent[]>) {}

  /** Newest first; `before` is the id of the last event of the previous page. */
  list(filter: AuditFilter): Promise<AuditEvent[]> {
    return this.query(filter)
  }
}
