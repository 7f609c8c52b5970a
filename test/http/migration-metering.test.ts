import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Migrator, sql } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { toConfig } from '../../src/config.js'
import { createDatabase } from '../../src/db/database.js'
import { migrationProvider } from '../../src/db/migrations/index.js'
import { dialectEnv } from '../dialect.js'

const storage = dialectEnv()
const dir = mkdtempSync(path.join(tmpdir(), 'tessera-migration-'))
afterEach(async () => {
  await storage.drop()
  rmSync(dir, { recursive: true, force: true })
})

it("keeps an earlier Tessera's validations per token and hour as valid counts, and drops the old table", async () => {
  const config = toConfig({ DATA_DIR: dir, ...storage.env })
  const db = createDatabase(config.db)
  try {
    if (config.db.kind === 'postgres' && config.db.schema) {
      await sql`create schema if not exists ${sql.id(config.db.schema)}`.execute(db)
    }
    const migrator = new Migrator({
      db,
      provider: migrationProvider,
      migrationTableSchema: config.db.kind === 'postgres' ? config.db.schema : undefined,
    })
    expect((await migrator.migrateTo('0012-session-proof')).error).toBeUndefined()
    const at = '2026-11-20T10:00:00.000Z'
    await sql`insert into accounts (username, plan, features, created, disabled)
      values ('old', 'free', '[]', ${at}, 0)`.execute(db)
    const [a, b, gone] = ['ca', 'cb', 'cgone'].map((p) => p.padEnd(25, '0'))
    for (const id of [a, b]) {
      const document = JSON.stringify({ id, usage: 'sk', client: 'api', default: false })
      await sql`insert into tokens
        (id, username, usage, is_default, scopeless, key_id, created, modified, document)
        values (${id}, 'old', 'sk', 0, 0, 'k', ${at}, ${at}, ${document})`.execute(db)
    }
    const hours: [string | undefined, string, number][] = [
      [a, '2026-11-21T09', 5],
      [a, '2026-11-21T10', 7],
      [a, '2026-11-22T00', 2],
      [b, '2026-11-21T10', 1],
      // A token deleted since: no account to count it against.
      [gone, '2026-11-21T10', 9],
    ]
    for (const [id, hour, count] of hours) {
      await sql`insert into token_usage (token_id, hour, count) values (${id}, ${hour}, ${count})`.execute(
        db,
      )
    }
    expect((await migrator.migrateTo('0013-metering')).error).toBeUndefined()
    const rows = (table: 'usage_hours' | 'usage_days') =>
      db
        .selectFrom(table)
        .select(['account', 'at', 'token_id', 'valid', 'revoked'])
        .orderBy('at')
        .orderBy('token_id')
        .execute()
        .then((found) =>
          found.map((r) => [r.account, r.at, r.token_id, Number(r.valid), Number(r.revoked)]),
        )
    expect(await rows('usage_hours')).toEqual([
      ['old', '2026-11-21T09', a, 5, 0],
      ['old', '2026-11-21T10', a, 7, 0],
      ['old', '2026-11-21T10', b, 1, 0],
      ['old', '2026-11-22T00', a, 2, 0],
    ])
    expect(await rows('usage_days')).toEqual([
      ['old', '2026-11-21', a, 12, 0],
      ['old', '2026-11-21', b, 1, 0],
      ['old', '2026-11-22', a, 2, 0],
    ])
    await expect(sql`select count(*) from token_usage`.execute(db)).rejects.toThrow()
  } finally {
    await db.destroy()
  }
})
