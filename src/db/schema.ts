/** Row types. Lists are JSON text and booleans 0/1 integers, the same on SQLite and PostgreSQL. */
export interface AccountsTable {
  username: string
  plan: string
  features: string
  created: string
  /** 1 when an operator disabled the account: its tokens are revoked while it stays so. */
  disabled: number
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
  /** The token object of the wire without `token`, as JSON (see tokens/document.ts). */
  document: string
}

export interface PasswordsTable {
  username: string
  /** `scrypt$<log2 N>$<r>$<p>$<salt>$<key>`, base64url; see accounts/passwords.ts. */
  hash: string
  changed: string
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
  username: string
  csrf: string
  created: string
  last_seen: string
}

export interface AuditEventsTable {
  id: string
  at: string
  action: string
  actor_type: string
  actor_id: string | null
  actor_usage: string | null
  username: string | null
  target_type: string
  target_id: string | null
  address: string | null
  request_id: string | null
  /** JSON object, or null. */
  details: string | null
}

export interface TokenUsageTable {
  token_id: string
  hour: string
  count: number | string | bigint
}

export interface TokenLastUsedTable {
  token_id: string
  at: string
}

export interface Database {
  accounts: AccountsTable
  tokens: TokensTable
  passwords: PasswordsTable
  setup_links: SetupLinksTable
  sessions: SessionsTable
  audit_events: AuditEventsTable
  token_usage: TokenUsageTable
  token_last_used: TokenLastUsedTable
}
