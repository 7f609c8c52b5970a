import type { Generated } from 'kysely'

export type { RatelimitOverridesTable } from './schema-limits.js'
export type {
  CreditLeasesTable,
  CreditsTable,
  UsageReportsTable,
  UsageTable,
} from './schema-usage.js'
export type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
} from './schema-webhooks.js'

import type { TokenLastUsedTable, TokenWarningsTable } from './schema-hygiene.js'
import type { RatelimitOverridesTable } from './schema-limits.js'
import type {
  CreditLeasesTable,
  CreditsTable,
  GoneTokensTable,
  UsageLimitedTable,
  UsageReportsTable,
  UsageTable,
  VerificationDropsTable,
  VerificationsTable,
} from './schema-usage.js'
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
} from './schema-webhooks.js'

/** Row types. Lists are JSON text and booleans 0/1 integers, the same on SQLite and PostgreSQL. */
export interface AccountsTable {
  username: string
  plan: string
  features: string
  created: string
  /** 1 when an operator disabled the account: its tokens are revoked while it stays so. */
  disabled: number
  /** The owner's token policy as JSON (token-policy.ts); null: none (migration 0014). */
  token_policy: Generated<string | null>
  /** The account's own named rate limits as JSON (ratelimit/named.ts); null: none (0018). */
  ratelimits: Generated<string | null>
  /** The account's workload identity trust policies as JSON (exchange/policies.ts); null: none. */
  trust_policies: Generated<string | null>
}

export interface TokensTable {
  id: string
  username: string
  usage: 'pk' | 'sk'
  is_default: number
  /** 1 when created with no scopes: such a token may never be given any. */
  scopeless: number
  key_id: string
  created: string
  modified: string
  /** The token object of the wire without `token`, as JSON (see db/token-document.ts). */
  document: string
  /** A rolled token's end (ISO 8601): valid before, revoked from then on; null otherwise. */
  retires: string | null
  /** When it was reported leaked and kept (flagged); null otherwise. */
  leaked: string | null
  /** Made by a roll: the id of the first token of its line of rolls; null otherwise. */
  lineage: string | null
  /** A child token: its parent's id (migration 0020, tokens/family.ts); null otherwise. */
  parent: string | null
}

/** An identity token exchanged (exchange/service.ts): refused again until `expires` (ISO). */
export interface ExchangeJtisTable {
  issuer: string
  jti: string
  expires: string
}

export interface LeakReportsTable {
  body_hash: string
  at: string
  answer: string
}

export interface PeopleTable {
  /** Unique across the service; an account's first owner has the account's username. */
  login: string
  email: string | null
  name: string | null
  /** `scrypt$<log2 N>$<r>$<p>$<salt>$<key>`, base64url (accounts/passwords.ts); null: none. */
  password: string | null
  password_changed: string | null
  oidc_issuer: string | null
  oidc_subject: string | null
  /** How the email was proven: `sso`, `portal`, or null (unproven; migration 0010). */
  email_proof: string | null
  created: string
}

export interface MembershipsTable {
  username: string
  login: string
  role: string
  created: string
}

export interface InvitationsTable {
  /** SHA-256 (hex) of the link's secret. */
  id_hash: string
  username: string
  email: string
  role: string
  invited_by: string | null
  created: string
  expires: string
  ended: string | null
}

export interface PortalLinksTable {
  /** SHA-256 (hex) of the link's secret. */
  id_hash: string
  username: string
  email: string
  name: string | null
  role: string
  return_url: string | null
  created: string
  expires: string
  used: string | null
}

export interface SignInFlowsTable {
  /** SHA-256 (hex) of the flow id in the browser's cookie. */
  id_hash: string
  state: string
  nonce: string
  verifier: string
  next: string
  expires: string
}

export interface SetupLinksTable {
  /** SHA-256 (hex) of the link's secret: the secret itself is never stored. */
  id_hash: string
  username: string
  created: string
  expires: string
  ended: string | null
}

export interface SessionsTable {
  /** SHA-256 (hex) of the session id in the cookie. */
  id_hash: string
  /** The account the session is in now (a person in several accounts can switch). */
  username: string
  /** The person; null only in rows older than migration 0006 (none remain after it). */
  login: string | null
  /** How the person signed in: `password`, `link` (portal link) or `sso`. */
  method: string
  /** A portal link's `returnUrl`: the header links back to the platform. */
  return_url: string | null
  csrf: string
  created: string
  last_seen: string
  /** The last proof of who the person is (sign-in or confirmation); null: `created`. */
  proven: string | null
  /** The account a portal link signed this session into; null for other sign-ins. */
  link_account: string | null
}

export interface AuditEventsTable {
  id: string
  at: string
  action: string
  actor_type: string
  actor_id: string | null
  actor_usage: string | null
  actor_login: string | null
  actor_method: string | null
  username: string | null
  target_type: string
  target_id: string | null
  address: string | null
  request_id: string | null
  /** JSON object, or null. */
  details: string | null
}

export interface EventOutboxTable {
  /** Assigned by the database: ascending in commit order on SQLite, in insert order on PostgreSQL. */
  seq: Generated<number | string>
  event_id: string
  at: string
  action: string
  username: string | null
  /** The event's JSON, as delivered. */
  body: string
}

export interface FactorsTable {
  id: string
  login: string
  /** `totp` or `passkey`. */
  kind: string
  name: string
  /** TOTP: the secret, encrypted under the factors key. */
  secret: string | null
  last_step: number | string
  credential_id: string | null
  public_key: string | null
  counter: number | string
  transports: string | null
  confirmed: number
  created: string
  last_used: string | null
}

export interface RecoveryCodesTable {
  login: string
  code_hash: string
  used: string | null
}

export interface PendingSigninsTable {
  id_hash: string
  login: string
  next: string
  expires: string
}

export interface WebauthnChallengesTable {
  challenge: string
  purpose: string
  login: string | null
  expires: string
}

export interface AccountPoliciesTable {
  username: string
  require_2fa: number
  changed: string
}

/** SQLite only: token changes for the server to read (see db/changes.ts). */
export interface TokenChangesTable {
  seq: Generated<number>
  id: string
  at: number
}

export interface Database {
  accounts: AccountsTable
  tokens: TokensTable
  gone_tokens: GoneTokensTable
  ratelimit_overrides: RatelimitOverridesTable
  people: PeopleTable
  memberships: MembershipsTable
  invitations: InvitationsTable
  portal_links: PortalLinksTable
  sign_in_flows: SignInFlowsTable
  factors: FactorsTable
  recovery_codes: RecoveryCodesTable
  pending_signins: PendingSigninsTable
  webauthn_challenges: WebauthnChallengesTable
  account_policies: AccountPoliciesTable
  token_changes: TokenChangesTable
  leak_reports: LeakReportsTable
  setup_links: SetupLinksTable
  sessions: SessionsTable
  audit_events: AuditEventsTable
  usage_minutes: UsageTable
  usage_hours: UsageTable
  usage_days: UsageTable
  usage_limited_minutes: UsageLimitedTable
  usage_limited_hours: UsageLimitedTable
  usage_limited_days: UsageLimitedTable
  usage_reports: UsageReportsTable
  credits: CreditsTable
  credit_leases: CreditLeasesTable
  token_last_used: TokenLastUsedTable
  token_warnings: TokenWarningsTable
  event_outbox: EventOutboxTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
  exchange_jtis: ExchangeJtisTable
  verifications: VerificationsTable
  verification_drops: VerificationDropsTable
}
