import pg from 'pg'
import { randomAlnum } from '../src/ids.js'

/**
 * The storage dialect a test run uses: `TEST_DIALECT=postgres` (with TEST_DATABASE_URL) or the
 * SQLite default. Each PostgreSQL harness gets a schema of its own, dropped when it closes.
 */
export const dialect = process.env.TEST_DIALECT === 'postgres' ? 'postgres' : 'sqlite'

export interface DialectEnv {
  env: Record<string, string>
  drop(): Promise<void>
}

export function dialectEnv(): DialectEnv {
  if (dialect === 'sqlite') return { env: {}, drop: async () => {} }
  const url = process.env.TEST_DATABASE_URL
  if (!url) throw new Error('TEST_DIALECT=postgres needs TEST_DATABASE_URL')
  const schema = `tessera_test_${randomAlnum(12)}`
  return {
    env: { DATABASE_URL: url, DATABASE_SCHEMA: schema },
    async drop() {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      try {
        await client.query(`drop schema if exists ${schema} cascade`)
      } finally {
        await client.end()
      }
    },
  }
}
