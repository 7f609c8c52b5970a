import type { ColumnType } from 'kysely'

export type Count = number | string | bigint

/** Verifications by outcome in one bucket (migration 0013): usage_minutes, _hours, _days. */
export interface UsageTable {
  account: string
  at: string
  token_id: string
  valid: ColumnType<Count, Count | undefined, Count>
  malformed: ColumnType<Count, Count | undefined, Count>
  invalid: ColumnType<Count, Count | undefined, Count>
  expired: ColumnType<Count, Count | undefined, Count>
  revoked: ColumnType<Count, Count | undefined, Count>
  rate_limited: ColumnType<Count, Count | undefined, Count>
  url_not_allowed: ColumnType<Count, Count | undefined, Count>
  ip_not_allowed: ColumnType<Count, Count | undefined, Count>
  scope_missing: ColumnType<Count, Count | undefined, Count>
  credits_exhausted: ColumnType<Count, Count | undefined, Count>
}

/** `rate_limited` by limit name in one bucket (migration 0019): usage_limited_minutes, _hours,
 * _days. The names of a bucket add up to at most its `usage_*` row's `rate_limited`. */
export interface UsageLimitedTable {
  account: string
  at: string
  token_id: string
  name: string
  count: Count
}

export interface UsageReportsTable {
  reporter: string
  batch: string
  received: string
}

export interface CreditsTable {
  account: string
  token_id: string
  remaining: Count
  balance: Count
  refill_interval: string | null
  refill_amount: Count | null
  refill_day: number | null
  period: string
  notified: ColumnType<number, number | undefined, number>
  changed: string
  plan: string | null
}

export interface CreditLeasesTable {
  id: string
  account: string
  token_id: string
  token_period: string | null
  account_period: string | null
  granted: Count
  returned: Count | null
  expires: string
}

/** A token deleted while its account stays: whose it was, for attribution (migration 0016). */
export interface GoneTokensTable {
  id: string
  username: string
  /** The token's `created`: not before its account's, which tells that account from a later one. */
  created: string
}

/** The verification log (migration 0021): one row per verification (docs/verifications.md). */
export interface VerificationsTable {
  at: Count
  id: string
  account: string
  token_id: string
  source: string
  outcome: string
  limit_name: string | null
  ip: string | null
  origin: string | null
  request_id: string | null
  duration_us: Count | null
}

/** Rows of the verification log dropped unwritten, per minute (epoch ms) and instance. */
export interface VerificationDropsTable {
  minute: Count
  instance: string
  dropped: Count
}
