import { Redis } from 'ioredis'
import pg from 'pg'
import { randomAlnum } from '../../src/ids.js'
import { formatSigningKeys, newSigningKey } from '../../src/tokens/keyring.js'

/** The shared servers of a fleet test: a fresh schema and Redis key prefix, one signing key. */
export function fleetEnv() {
  const databaseUrl = process.env.TEST_DATABASE_URL
  const redisUrl = process.env.TEST_REDIS_URL
  if (!databaseUrl || !redisUrl) {
    throw new Error('the scale-out tests need TEST_DATABASE_URL and TEST_REDIS_URL')
  }
  const run = randomAlnum(10)
  const schema = `tessera_fleet_${run}`
  return {
    databaseUrl,
    redisUrl,
    schema,
    prefix: `tessera-test-${run}:`,
    env: {
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `tessera-test-${run}:`,
      SIGNING_KEYS: formatSigningKeys([newSigningKey()]),
    },
    async drop() {
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      await client.query(`drop schema if exists ${schema} cascade`)
      await client.end()
      const redis = new Redis(redisUrl)
      const keys = await redis.keys(`tessera-test-${run}:*`)
      if (keys.length > 0) await redis.del(...keys)
      redis.disconnect()
    },
  }
}

/** Waits, if needed, so that the next `seconds` fall inside one rate-limit window. */
export async function awayFromWindowEdge(seconds: number) {
  const into = (Date.now() / 1000) % 60
  if (into > 60 - seconds) await new Promise((r) => setTimeout(r, (60 - into) * 1000 + 50))
}
