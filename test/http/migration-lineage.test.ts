import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Migrator, sql } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { toConfig } from '../../src/config.js'
import { createContext } from '../../src/context.js'
import { createDatabase } from '../../src/db/database.js'
import { migrationProvider } from '../../src/db/migrations/index.js'
import { tokensRepo } from '../../src/db/repositories.js'
import { dialectEnv } from '../dialect.js'

const storage = dialectEnv()
const dir = mkdtempSync(path.join(tmpdir(), 'tessera-migration-'))
afterEach(async () => {
  await storage.drop()
  rmSync(dir, { recursive: true, force: true })
})

it('gives tokens rolled before 0011 and still retiring their line, from the audit log', async () => {
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
  expect((await migrator.migrateTo('0010-email-proof')).error).toBeUndefined()
  // As an earlier Tessera left them: W rolled into W2 with a grace period, then W2 into W3.
  const hour = 3_600_000
  const iso = (ms: number) => new Date(ms).toISOString()
  const now = Date.now()
  const [w, w2, w3, other] = ['cw', 'cw2', 'cw3', 'cother'].map((p) => p.padEnd(25, '0'))
  await sql`insert into accounts (username, plan, features, created, disabled)
    values ('old', 'free', '[]', ${iso(now - 2 * hour)}, 0)`.execute(db)
  const token = async (id: string | undefined, retires: string | null) => {
    const document = JSON.stringify({
      id,
      usage: 'sk',
      client: 'api',
      default: false,
      scopes: ['tokens:write'],
      note: '',
      created: iso(now - hour),
      modified: iso(now - hour),
    })
    await sql`insert into tokens
      (id, username, usage, is_default, scopeless, key_id, created, modified, document, retires)
      values (${id}, 'old', 'sk', 0, 0, 'k', ${iso(now - hour)}, ${iso(now - hour)},
        ${document}, ${retires})`.execute(db)
  }
  await token(w, iso(now + hour))
  await token(w2, iso(now + 2 * hour))
  await token(w3, null)
  await token(other, null)
  const rolled = async (n: number, target: string | undefined, previous: string | undefined) => {
    const details = JSON.stringify({ previous, usage: 'sk', retires: iso(now + n * hour) })
    await sql`insert into audit_events (id, at, action, actor_type, username, target_type,
      target_id, details) values (${`e${n}`}, ${iso(now - hour + n)}, 'token.rolled', 'cli',
      'old', 'token', ${target}, ${details})`.execute(db)
  }
  await rolled(1, w2, w)
  await rolled(2, w3, w2)
  await db.destroy()

  const ctx = await createContext(config)
  try {
    const lineage = async (id: string | undefined) =>
      (await tokensRepo.find(ctx.db, id as string))?.lineage
    expect([await lineage(w), await lineage(w2), await lineage(w3), await lineage(other)]).toEqual([
      undefined,
      w,
      w,
      undefined,
    ])
    const account = await ctx.accounts.find('old')
    if (account === undefined) throw new Error('no account')
    // W's string, still working, cannot delete W3; another token's can.
    const by = (id: string | undefined) => ({ type: 'token' as const, id, usage: 'sk' as const })
    const refused = await ctx.tokens.remove(account, w3 as string, by(w)).catch((e) => e)
    expect([refused.statusCode, refused.message]).toEqual([
      403,
      'a retiring token cannot change the token that replaced it',
    ])
    await ctx.tokens.remove(account, w3 as string, by(other))
    expect(await lineage(w3)).toBeUndefined()
  } finally {
    await ctx.close()
  }
})
