import pg from 'pg'
import { expect, it } from 'vitest'
import { toConfig } from '../../src/config.js'
import { createContext } from '../../src/context.js'
import { randomAlnum } from '../../src/ids.js'
import { fleetEnv } from './env.js'

/**
 * Deployments and test runs share a database, each in a schema of its own. One starting (its
 * migrator looks at which tables exist) while others are created and dropped must not fail:
 * Kysely's own introspector read every schema's columns, and failed with "schema … does not
 * exist" when one went away under it (test runs in CI, 1 in a few).
 */
it('starts while other schemas of the database are created and dropped', async () => {
  const churn = new pg.Client({ connectionString: fleetEnv().databaseUrl })
  await churn.connect()
  let stop = false
  let churned = 0
  const churning = (async () => {
    while (!stop) {
      const schema = `tessera_churn_${randomAlnum(10)}`
      await churn.query(`create schema ${schema}`)
      await churn.query(`create table ${schema}.t (id serial primary key, a int, b text)`)
      await churn.query(`drop schema ${schema} cascade`)
      churned++
    }
  })()
  const started: string[] = []
  try {
    for (let i = 0; i < 8; i++) {
      const fleet = fleetEnv()
      const config = toConfig({ ...fleet.env, REDIS_URL: undefined, DATA_DIR: '/tmp' } as never)
      try {
        const ctx = await createContext(config)
        started.push(ctx.ready ? 'ready' : 'not ready')
        await ctx.close()
      } finally {
        await fleet.drop()
      }
    }
  } finally {
    stop = true
    await churning
    await churn.end()
  }
  expect(started).toEqual(Array(8).fill('ready'))
  expect(churned).toBeGreaterThan(0)
})
