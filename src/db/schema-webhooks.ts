import type { Generated } from 'kysely'

export interface WebhookEndpointsTable {
  id: string
  url: string
  /** The HMAC key of the signatures (`whsec_...`): shown through the admin API, never logged. */
  secret: string
  /** JSON array of actions; empty: every action. */
  events: string
  created: string
  /** The last outbox seq handled: delivered, finally failed, or not matching the filter. */
  last_seq: number | string
  /** `healthy`, or `failing` while the attempts at its next event fail. */
  state: string
  /** Epoch ms of the next retry of the event at the head; nobody claims the endpoint before. */
  retry_at: number | string
  /** The dispatcher delivering to it, and until when (epoch ms). */
  lease_owner: string | null
  lease_until: number | string
}

export interface WebhookDeliveriesTable {
  id: Generated<number | string>
  endpoint_id: string
  event_id: string
  /** The outbox seq; null for a ping. */
  seq: number | string | null
  action: string
  /** `pending`, `delivered` or `failed`. */
  state: string
  /** The first attempt. */
  created: string
  updated: string
  attempts: number
  next_attempt: string | null
}

export interface WebhookAttemptsTable {
  delivery_id: number | string
  n: number
  at: string
  /** The HTTP status; null when there was no answer. */
  status: number | null
  error: string | null
  duration_ms: number
}
