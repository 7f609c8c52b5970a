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

/** A row of the log as the insert takes it (its id given apart: rowText). */
export interface LogRowColumns {
  at: number
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

/** What a JSON string holds as it is: no quote, backslash or control character to escape. */
const plain = /^[\w.:@[\]/+=-]*$/

const text = (s: string | null) =>
  s === null ? 'null' : plain.test(s) ? `"${s}"` : JSON.stringify(s)

/**
 * One row as the insert's JSON array, written when the row is decided (src/verification/
 * log-writer.ts): a string held until its batch is written, where an object and its copies
 * would be kept alive. What a client sent (an address, a request id) is escaped unless plain.
 */
export const rowText = (r: LogRowColumns, id: string) =>
  `[${r.at},"${id}",${text(r.account)},${text(r.tokenId)},${text(r.source)},${text(r.outcome)},${text(r.limit)},${text(r.ip)},${text(r.origin)},${text(r.requestId)},${Number.isFinite(r.durationUs) ? r.durationUs : 'null'}]`

/** The insert's parameter for stored rows (tests and tools seed with it). */
export const rowsJson = (rows: readonly (LogRowColumns & { id: string })[]) =>
  `[${rows.map((r) => rowText(r, r.id)).join(',')}]`
