/** The last valid use of each pk/sk, to the minute (written by the usage meter's flush). */
export interface TokenLastUsedTable {
  token_id: string
  at: string
}

/** Each warning given about a token, once per kind and basis (migration 0014). */
export interface TokenWarningsTable {
  token_id: string
  /** `expiring_7d`, `expiring_1d`, `retiring`, or `idle_<days>` (the rule it was given under). */
  kind: string
  /** The instant warned about (ISO 8601): an end of life, or the last use idleness counts from. */
  basis: string
  username: string
  at: string
}
