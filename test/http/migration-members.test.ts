import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Migrator, sql } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { toConfig } from '../../src/config.js'
import { createContext } from '../../src/context.js'
import { createDatabase } from '../../src/db/database.js'
import { migrationProvider } from '../../src/db/migrations/index.js'
import { hashPassword } from '../../src/people/passwords.js'
import { digest } from '../../src/people/secrets.js'
import { dialectEnv } from '../dialect.js'

const storage = dialectEnv()
const dir = mkdtempSync(path.join(tmpdir(), 'tessera-migration-'))
afterEach(async () => {
  await storage.drop()
  rmSync(dir, { recursive: true, force: true })
})

it('makes each holder of a database before members its account first owner: password and sessions kept', async () => {
  const config = toConfig({ DATA_DIR: dir, ...storage.env })
  const db = createDatabase(config.db)
  if (config.db.kind === 'postgres' && config.db.schema) {
    await sql`create schema if not exists ${sql.id(config.db.schema)}`.execute(db)
  }
  const migrator = new Migrator({
    db,
    provider: migrationProvider,
    migrationTableSchema: config.db.kind === 'postgres' ? config.db.schema : undefined,
  })
  const before = await migrator.migrateTo('0005-webhooks')
  expect(before.error).toBeUndefined()
  const at = '2026-11-01T10:00:00.000Z'
  const hash = await hashPassword('an old password of the holder')
  // As an earlier Tessera left them: an account, its password and a session.
  await sql`insert into accounts (username, plan, features, created, disabled)
    values ('old', 'free', '[]', ${at}, 0)`.execute(db)
  await sql`insert into passwords (username, hash, changed) values ('old', ${hash}, ${at})`.execute(
    db,
  )
  const now = new Date().toISOString()
  await sql`insert into sessions (id_hash, username, csrf, created, last_seen)
    values (${digest('the-session-id')}, 'old', 'csrf', ${now}, ${now})`.execute(db)
  await db.destroy()

  const ctx = await createContext(config)
  try {
    expect(await ctx.members.list('old')).toEqual([
      { login: 'old', role: 'owner', created: at, sso: false },
    ])
    const session = await ctx.holders.session('the-session-id')
    expect(session).toMatchObject({ username: 'old', login: 'old', method: 'password' })
    const anonymous = { type: 'anonymous' as const }
    expect(await ctx.holders.signIn('old', 'an old password of the holder', anonymous)).toEqual({
      login: 'old',
      accounts: ['old'],
      secondFactor: false,
    })
    expect(await ctx.holders.signIn('old', 'not the password', anonymous)).toBeUndefined()
    const tables = await ctx.db.introspection.getTables()
    expect(tables.map((t) => t.name)).not.toContain('passwords')
  } finally {
    await ctx.close()
  }
})
