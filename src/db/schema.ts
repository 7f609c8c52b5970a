/** Row types. Lists are JSON text and booleans 0/1 integers, the same on SQLite and PostgreSQL. */
export interface AccountsTable {
  username: string
  plan: string
  features: string
  created: string
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

export interface Database {
  accounts: AccountsTable
  tokens: TokensTable
}
