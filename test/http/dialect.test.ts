import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialect } from '../dialect.js'
import { type Harness, harness } from '../helpers.js'

let h: Harness
beforeAll(async () => {
  h = await harness()
})
afterAll(() => h.close())

describe(`the ${dialect} harness`, () => {
  it('runs on the selected dialect, isolated in its own schema on PostgreSQL', async () => {
    expect(h.ctx.config.db.kind).toBe(dialect)
    if (h.ctx.config.db.kind === 'postgres') {
      const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
        h.ctx.db,
      )
      expect(rows[0]?.schema).toBe(h.ctx.config.db.schema)
      expect(rows[0]?.schema).toMatch(/^tessera_test_[a-z0-9]{12}$/)
    } else {
      expect(h.ctx.config.db.file).toBe(`${h.dir}/tessera.db`)
    }
  })
})
