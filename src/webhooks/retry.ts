import type { DeliveryState } from '../db/webhook-deliveries.js'

/**
 * An event is retried until this long after it happened (its `at`, or the endpoint's creation
 * if later), then marked failed. Not from its first attempt: the events behind a failing one
 * are not attempted, so after an outage of days that would let the backlog advance by one event
 * a day, while the outbox prune (EVENT_RETENTION_HOURS) caught up with it. Counted from the
 * event, the backlog older than this gets one attempt each and is marked failed at once.
 */
export const giveUpMs = 24 * 3_600_000

/**
 * The wait before the next attempt after `failures` failed ones: exponential from 1 s, capped
 * at 1 hour, with full jitter (uniform from 0), so that endpoints coming back are not stampeded.
 */
export function backoffMs(failures: number, random = Math.random): number {
  const cap = Math.min(3_600_000, 1000 * 2 ** Math.min(Math.max(failures, 1) - 1, 22))
  return Math.floor(random() * cap)
}

/** When an event's retries started counting (see `giveUpMs`); its first attempt if it has no time. */
export function retriedSince(
  eventAt: string | undefined,
  firstAttempt: string,
  endpointCreated: string,
): number {
  const happened = Date.parse(eventAt ?? '')
  return Number.isNaN(happened)
    ? Date.parse(firstAttempt)
    : Math.max(happened, Date.parse(endpointCreated))
}

/** Where a delivery stands after its `attempts`-th attempt, and when it is retried (0: never). */
export function afterAttempt(
  delivered: boolean,
  attempts: number,
  now: number,
  since: number,
): { state: DeliveryState; retryAt: number } {
  if (delivered) return { state: 'delivered', retryAt: 0 }
  if (now - since >= giveUpMs) return { state: 'failed', retryAt: 0 }
  // Due strictly after `now`: full jitter can draw 0, and a retry due at `now` is claimed at
  // once, before the clock has moved (a clock moved only when told, as the tests', then gets an
  // extra attempt, stamped with the old time).
  const retryAt = Math.min(now + Math.max(1, backoffMs(attempts)), since + giveUpMs)
  return { state: 'pending', retryAt }
}
