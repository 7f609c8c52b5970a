import { CompiledQuery } from 'kysely'
import { describe, expect, it } from 'vitest'
import { compiledOnce } from '../../src/db/compiled.js'

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
    // Another executor (a transaction, another database) compiles on its own.
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
})
