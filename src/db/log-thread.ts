import { setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import SQLite from 'better-sqlite3'
import { sqliteLogInsert } from './log-insert.js'

// The verification log's writer thread on SQLite (db/log-writer-thread.ts starts it): inserts
// and WAL checkpoints cost the event loop nothing. A connection of its own to the same file;
// SQLite serializes it with the server's writes (busy_timeout, as the CLI beside a server).
// The database and statement live as long as the thread (better-sqlite3 12 objects must never
// become garbage on Node 24: db/database.ts).

// Background work: the lowest priority (nice 19, this thread alone on Linux), so that a request's
// thread (and a load generator beside it) is never kept waiting behind an insert; a writer that
// falls behind fills the bounded buffer, whose overflow is dropped and counted (log-writer.ts).
try {
  setPriority(19)
} catch {
  // Where lowering it is refused, it keeps the process's.
}

const { file } = workerData as { file: string }
const sqlite = new SQLite(file)
sqlite.exec('pragma busy_timeout = 5000')
sqlite.exec('pragma synchronous = NORMAL')
const insert = sqlite.prepare(sqliteLogInsert)

const decoder = new TextDecoder()

parentPort?.on('message', (message: { n: number; bytes: Uint8Array }) => {
  try {
    insert.run(decoder.decode(message.bytes))
    parentPort?.postMessage({ n: message.n })
  } catch (err) {
    const { message: reason, code } = err as { message?: string; code?: string }
    parentPort?.postMessage({ n: message.n, error: { message: reason, code } })
  }
})
