import { randomBytes } from 'node:crypto'

/** A balance's refill: daily at 00:00 UTC, or monthly on `day` (1 to 28) at 00:00 UTC. */
export interface Refill {
  interval: 'daily' | 'monthly'
  amount: number
  /** monthly only: the day of the month (1 to 28). */
  day?: number
}

const dayMs = 86_400_000

const monthDay = (year: number, month: number, day: number) => Date.UTC(year, month, day)

/** The first refill moment strictly after `after` (epoch ms). */
export function nextRefill(refill: Refill, after: number): number {
  if (refill.interval === 'daily') return Math.floor(after / dayMs) * dayMs + dayMs
  const d = new Date(after)
  const day = refill.day ?? 1
  const thisMonth = monthDay(d.getUTCFullYear(), d.getUTCMonth(), day)
  return thisMonth > after ? thisMonth : monthDay(d.getUTCFullYear(), d.getUTCMonth() + 1, day)
}

/** The last refill moment at or before `at` (epoch ms). */
export function lastRefill(refill: Refill, at: number): number {
  if (refill.interval === 'daily') return Math.floor(at / dayMs) * dayMs
  const d = new Date(at)
  const day = refill.day ?? 1
  const thisMonth = monthDay(d.getUTCFullYear(), d.getUTCMonth(), day)
  return thisMonth <= at ? thisMonth : monthDay(d.getUTCFullYear(), d.getUTCMonth() - 1, day)
}

/** How long a lease lasts at most; it ends earlier at the balance's next refill. */
export const leaseMs = 60_000

/**
 * A new lease id: 128 random bits in base64url (22 characters). Opaque to the verifier; to
 * Tessera the key of the lease's record (the account, token, periods and size it was granted
 * with), so a made-up id names nothing. Not a credential: returning a lease only gives back
 * what its own account was granted, once.
 */
export const leaseId = () => randomBytes(16).toString('base64url')

/** Whether `text` could be a lease id at all (anything else is not looked up). */
export const isLeaseId = (text: string) => /^[A-Za-z0-9_-]{22}$/.test(text)
