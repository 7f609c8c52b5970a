import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

/**
 * On Node 24.19 and later, better-sqlite3 12 aborts the process when the garbage collector
 * frees one of its statements or databases outside a context (see `database.ts`). The
 * database layer must therefore never let one become garbage: here, in a process of its own
 * (an abort would take a test worker with it), more distinct queries than any statement cache
 * bound, a closed database, and then enough allocation for many collections.
 */
const root = path.resolve(import.meta.dirname, '../..')
const script = `
import { sql } from 'kysely'
import { createDatabase } from ${JSON.stringify(path.join(root, 'dist/src/db/database.js'))}
const db = createDatabase({ kind: 'sqlite', file: ':memory:' })
let sum = 0
for (let i = 0; i < 600; i++) {
  const { rows } = await sql.raw('select ' + i + ' as n').execute(db)
  sum += rows[0].n
}
await db.destroy()
const other = createDatabase({ kind: 'sqlite', file: ':memory:' })
await sql\`select 1\`.execute(other)
await other.destroy()
let junk = []
for (let round = 0; round < 40; round++) {
  junk = []
  for (let i = 0; i < 200000; i++) junk.push({ i, s: 'x' + i })
}
process.stdout.write('ok ' + sum + ' ' + junk.length)
`

describe('the SQLite layer and the garbage collector', () => {
  it('lets no statement or database be collected: the process survives many collections', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '--max-semi-space-size=1', '-e', script],
      { cwd: root, timeout: 60_000 },
    )
    expect(stdout).toBe(`ok ${(599 * 600) / 2} 200000`)
  })
})
