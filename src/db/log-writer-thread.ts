import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'

/** The writer thread's module: built JavaScript only (a test run from TypeScript has none). */
const script = new URL('./log-thread.js', import.meta.url)

/**
 * The verification log's rows written by a thread of their own on SQLite (db/log-thread.ts):
 * better-sqlite3 is synchronous, and a batch's insert (the table and two indexes) and the WAL
 * checkpoints it sets off would otherwise stop every request for their duration. Undefined
 * where the thread cannot run (an in-memory database, or source run without a build): the
 * caller then writes in its own thread. One batch at a time, answered in order.
 */
export function logWriterThread(file: string) {
  if (file === ':memory:' || !existsSync(fileURLToPath(script))) return undefined
  const worker = new Worker(script, { workerData: { file } })
  let n = 0
  const waiting = new Map<number, { resolve(): void; reject(err: Error): void }>()
  let failed: Error | undefined
  const failAll = (err: Error) => {
    failed = err
    for (const w of waiting.values()) w.reject(err)
    waiting.clear()
  }
  worker.on('message', (m: { n: number; error?: { message?: string; code?: string } }) => {
    const w = waiting.get(m.n)
    waiting.delete(m.n)
    if (waiting.size === 0) worker.unref()
    if (m.error === undefined) w?.resolve()
    else w?.reject(Object.assign(new Error(m.error.message), { code: m.error.code }))
  })
  worker.on('error', failAll)
  worker.on('exit', () => failAll(new Error('the verification log thread exited')))
  // The process may exit with it when no batch is on its way. After the listeners: a 'message'
  // listener refs the worker's port again.
  worker.unref()
  return {
    /** Writes a batch: the insert's JSON parameter (db/log-insert.ts), UTF-8 (copied over). */
    write(bytes: Uint8Array): Promise<void> {
      if (failed !== undefined) return Promise.reject(failed)
      return new Promise<void>((resolve, reject) => {
        waiting.set(++n, { resolve, reject })
        // Held while a batch is on its way: a process that stops waits for its last one.
        worker.ref()
        worker.postMessage({ n, bytes })
      })
    },
  }
}
