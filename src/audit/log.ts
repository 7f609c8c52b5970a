import { type AuditFilter, auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import type { AuditEvent } from './events.js'

export type { AuditFilter }

/**
 * Reading the audit log (the admin API, `tessera audit`, the dashboard's Activity page).
 * Events are written by the services, each in the transaction of its change.
 */
export class AuditLog {
  constructor(private readonly db: Db) {}

  /** Newest first; `before` is the id of the last event of the previous page. */
  list(filter: AuditFilter): Promise<AuditEvent[]> {
    return auditRepo.list(this.db, filter)
  }
}
