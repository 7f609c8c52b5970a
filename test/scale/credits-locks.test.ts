import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, type Harness, harness } from '../helpers.js'
import { admin, adminEnv } from '../http/admin-client.js'

/**
 * PostgreSQL only (this project runs there): a check that spends nothing (introspection with
 * cost 0, GET of the credits) reads a balance without locking it, so it does not wait on a
 * spend holding the row.
 */

let h: Harness | undefined
afterEach(() => h?.close())

it('runs on PostgreSQL', () => {
  expect(process.env.TEST_DIALECT).toBe('postgres')
})

describe('a balance locked by a spend', () => {
  it('does not hold up a cost of 0 or a read', async () => {
    const source = readFileSync(
      path.join(import.meta.dirname, '../../catalog/default.yaml'),
      'utf8',
    )
    const yaml = source.replace(
      '    # credits: { amount: 10000, refill: monthly, day: 1 }',
      '    credits: { amount: 1000, refill: monthly, day: 1 }',
    )
    const file = path.join(tmpdir(), `tessera-plans-${process.pid}-${Date.now()}.yaml`)
    writeFileSync(file, yaml)
    try {
      h = await harness({ ...adminEnv, SCOPES_FILE: file })
    } finally {
      rmSync(file)
    }
    const ctx = h.ctx
    await ctx.accounts.create('carol', 'pro', [], cliActor)
    const sk = await h.token('carol', all)
    await ctx.credits.spend('carol', undefined, 1)
    const app = h.app
    await ctx.db.transaction().execute(async (trx) => {
      await sql`select remaining from credits where account = 'carol' for update`.execute(trx)
      const res = await admin(app, 'POST', '/introspect', { token: sk.token, cost: 0 })
      expect(res.body.credits).toEqual({ account: 999 })
      const got = await admin(app, 'GET', '/accounts/carol/credits')
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ remaining: 999, plan: true })
    })
  })
})
