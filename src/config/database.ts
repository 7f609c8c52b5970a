import path from 'node:path'
import type { Env } from './env.js'
import { ConfigError } from './error.js'
import { integer } from './values.js'

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string }
  | { kind: 'postgres'; url: string; poolSize: number; schema?: string }

export interface RedisConfig {
  url: string
  keyPrefix: string
}

/** PostgreSQL when DATABASE_URL is given, otherwise SQLite in DATA_DIR. */
export function databaseConfig(env: Env, dataDir: string): DatabaseConfig {
  if (env.DATABASE_URL === undefined) {
    return { kind: 'sqlite', file: path.join(dataDir, 'tessera.db') }
  }
  if (!/^postgres(ql)?:\/\//.test(env.DATABASE_URL)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://')
  }
  if (env.DATABASE_SCHEMA !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(env.DATABASE_SCHEMA)) {
    throw new ConfigError('DATABASE_SCHEMA must be 1-63 characters of a-z, 0-9 and _')
  }
  return {
    kind: 'postgres',
    url: env.DATABASE_URL,
    poolSize: integer('DATABASE_POOL_SIZE', env.DATABASE_POOL_SIZE, 10, 1, 1000),
    schema: env.DATABASE_SCHEMA,
  }
}

export function redisConfig(env: Env): RedisConfig | undefined {
  if (env.REDIS_URL === undefined) return undefined
  if (!/^rediss?:\/\//.test(env.REDIS_URL)) {
    throw new ConfigError('REDIS_URL must start with redis:// or rediss://')
  }
  return { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX ?? 'tessera:' }
}
