import { CompiledQuery, type Kysely } from 'kysely'
import { describe, expect, it } from 'vitest'
import { compiledOnce, powerOfTwoRuns } from '../../src/db/compiled.js'
import { createDatabase } from '../../src/db/database.js'

const query = (sql: string, parameters: unknown[]) => ({
  builds: 0,
  compile() {
    this.builds++
    return CompiledQuery.raw(sql, parameters)
  },
})

describe('compiledOnce', () => {
  it('builds a shape once and reuses its SQL with new parameters', () => {
    const executor = {}
    const first = query('select ? as a', [1])
    expect(compiledOnce(executor, 's', [1], () => first)).toMatchObject({ sql: 'select ? as a' })
    const second = query('never used', [2])
    const again = compiledOnce(executor, 's', [2], () => second)
    expect([again.sql, again.parameters, second.builds]).toEqual(['select ? as a', [2], 0])
    // Another database compiles on its own.
    const other = query('select $1 as a', [3])
    expect(compiledOnce({}, 's', [3], () => other).sql).toBe('select $1 as a')
  })

  it('always builds a shape whose parameters were not in the compiled order', () => {
    const executor = {}
    const swapped = query('select ?, ?', [2, 1])
    compiledOnce(executor, 's', [1, 2], () => swapped)
    const next = query('select ?, ?', [4, 3])
    expect(compiledOnce(executor, 's', [3, 4], () => next).parameters).toEqual([4, 3])
    expect(next.builds).toBe(1)
  })

  it('shares one compiled text between a database and its transactions', async () => {
    // Tessera's own SQLite database (its statements are never collected: see database.ts).
    const db = createDatabase({ kind: 'sqlite', file: ':memory:' }) as unknown as Kysely<{
      t: { a: number }
    }>
    try {
      await db.schema.createTable('t').addColumn('a', 'integer').execute()
      let builds = 0
      const insert = (executor: Kysely<{ t: { a: number } }>, a: number) =>
        executor.executeQuery(
          compiledOnce(executor, 'insert t', [a], () => {
            builds++
            return executor.insertInto('t').values({ a })
          }),
        )
      await insert(db, 1)
      await db.transaction().execute((trx) => insert(trx, 2))
      await db.transaction().execute((trx) => insert(trx, 3))
      const rows = await db.selectFrom('t').select('a').orderBy('a').execute()
      expect([builds, rows]).toEqual([1, [{ a: 1 }, { a: 2 }, { a: 3 }]])
      // With a plugin the text may differ: that executor is not served from the shared cache.
      const other = db.withPlugin({
        transformQuery: (args) => args.node,
        transformResult: async (args) => args.result,
      })
      await insert(other, 4)
      expect(builds).toBe(2)
    } finally {
      await db.destroy()
    }
  })
})

describe('powerOfTwoRuns', () => {
  it('splits a list into runs of powers of two, longest first, in order', () => {
    const list = Array.from({ length: 300 }, (_, i) => i)
    const runs = powerOfTwoRuns(list)
    expect(runs.map((r) => r.length)).toEqual([256, 32, 8, 4])
    expect(runs.flat()).toEqual(list)
    expect(powerOfTwoRuns([])).toEqual([])
    expect(powerOfTwoRuns(['a'])).toEqual([['a']])
    expect(powerOfTwoRuns([1, 2, 3]).map((r) => r.length)).toEqual([2, 1])
    expect(powerOfTwoRuns(Array.from({ length: 600 })).map((r) => r.length)).toEqual([
      256, 256, 64, 16, 8,
    ])
  })

  it('gives every length from 1 to 500 one of 9 run sizes', () => {
    const sizes = new Set<number>()
    for (let n = 1; n <= 500; n++) {
      for (const run of powerOfTwoRuns(Array.from({ length: n }))) sizes.add(run.length)
    }
    expect([...sizes].sort((a, b) => a - b)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256])
  })
})
