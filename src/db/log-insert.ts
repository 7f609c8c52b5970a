/**
 * The verification log's SQLite insert: a batch of rows as one JSON parameter (an array of
 * arrays, in the columns' order), for a constant statement prepared once. Shared by the
 * repository (in the event loop's thread) and the log's writer thread (db/log-thread.ts).
 */
export const sqliteLogInsert = `insert into verifications
  (at, id, account, token_id, source, outcome, limit_name, ip, origin, request_id, duration_us)
  select value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6,
    value->>7, value->>8, value->>9, value->>10
  from json_each(?)`

/** A row of the log as the insert takes it. */
export interface LogRowColumns {
  at: number
  id: string
  account: string
  tokenId: string
  source: string
  outcome: string
  limit: string | null
  ip: string | null
  origin: string | null
  requestId: string | null
  durationUs: number | null
}

/** By account, then token: a batch's index entries go in key order, leaf after leaf. */
const byKey = (a: LogRowColumns, b: LogRowColumns) =>
  a.account < b.account ? -1 : a.account > b.account ? 1 : a.tokenId < b.tokenId ? -1 : 1

/** The insert's parameter: the rows as arrays, sorted by key. */
export const rowsJson = (rows: readonly LogRowColumns[]) =>
  JSON.stringify(
    [...rows]
      .sort(byKey)
      .map((r) => [
        r.at,
        r.id,
        r.account,
        r.tokenId,
        r.source,
        r.outcome,
        r.limit,
        r.ip,
        r.origin,
        r.requestId,
        r.durationUs,
      ]),
  )
