import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
import { changesChannel } from '../../src/db/changes.js'
import type { AccountRecord } from '../../src/db/repositories.js'
import { fleetEnv } from './env.js'

const fleet = fleetEnv()
let a: AppContext
let b: AppContext
let account: AccountRecord

const until = async (check: () => Promise<boolean>, ms = 3000) => {
  const since = performance.now()
  while (performance.now() - since < ms) {
    if (await check()) return performance.now() - since
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`not within ${ms} ms`)
}
/** Instance b has the record in its cache: a second validation costs no query. */
const feedLive = () =>
  until(async () => (await b.tokens.validate('x.y.z')).code === 'TokenMalformed' && isLive())
const isLive = async () => {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
    where application_name = ${`tessera-changes:${fleet.schema}`}`.execute(a.db)
  return (rows[0]?.n ?? 0) >= 2
}

beforeAll(async () => {
  const config = toConfig({ ...fleet.env, REDIS_URL: undefined, DATA_DIR: '/tmp' } as never)
  a = await createContext(config)
  b = await createContext(config)
  account = (await a.accounts.create('cached', undefined, [], cliActor)) as AccountRecord
  await feedLive()
})
afterAll(async () => {
  await a?.close()
  await b?.close()
  await fleet.drop()
})

describe('cached token records on two instances', () => {
  it('drop a deleted token on the other instance within one second', async () => {
    const t = await a.tokens.create(
      account,
      a.accounts.holder(account),
      {
        scopes: ['styles:read'],
      },
      cliActor,
    )
    expect((await b.tokens.validate(t.token as string)).code).toBe('TokenValid')
    expect((await b.tokens.validate(t.token as string)).code).toBe('TokenValid')
    await a.tokens.remove(account, t.id, cliActor)
    const ms = await until(
      async () => (await b.tokens.validate(t.token as string)).code === 'TokenRevoked',
    )
    expect(ms).toBeLessThan(1000)
  })

  it('see an update of scopes on the other instance within one second', async () => {
    const t = await a.tokens.create(
      account,
      a.accounts.holder(account),
      {
        scopes: ['tokens:read'],
      },
      cliActor,
    )
    const scopesOn = async (ctx: AppContext) => {
      const v = await ctx.tokens.validate(t.token as string)
      return v.code === 'TokenValid' ? [...v.principal.scopes] : []
    }
    expect(await scopesOn(b)).toEqual(['tokens:read'])
    await a.tokens.update(
      account,
      a.accounts.holder(account),
      t.id,
      { scopes: ['scopes:list'] },
      cliActor,
    )
    const ms = await until(async () => (await scopesOn(b)).join() === 'scopes:list')
    expect(ms).toBeLessThan(1000)
  })

  it('empty the cache when the change feed is lost, and fill it again once it is back', async () => {
    const t = await a.tokens.create(
      account,
      a.accounts.holder(account),
      {
        scopes: ['styles:read'],
      },
      cliActor,
    )
    expect((await b.tokens.validate(t.token as string)).code).toBe('TokenValid')
    // Cut every change-feed connection of this run: notifications sent now would be lost.
    await sql`select pg_terminate_backend(pid) from pg_stat_activity
      where application_name = ${`tessera-changes:${fleet.schema}`}`.execute(a.db)
    await until(async () => !(await isLive()))
    await a.tokens.remove(account, t.id, cliActor)
    // b cannot have heard of the delete; it must not answer from a stale cache.
    expect((await b.tokens.validate(t.token as string)).code).toBe('TokenRevoked')
    await feedLive()
  })
})

describe('the change feed of a deployment', () => {
  it('is its own: another schema on the same database empties none of its entries', async () => {
    const other = fleetEnv()
    const config = toConfig({ ...other.env, REDIS_URL: undefined, DATA_DIR: '/tmp' } as never)
    const c = await createContext(config)
    // A listener of the channel shared before it was per schema (a version before this one).
    const legacy = new pg.Client({ connectionString: fleet.databaseUrl })
    const heard: string[] = []
    legacy.on('notification', (n) => heard.push(`${n.channel} ${n.payload}`))
    await legacy.connect()
    await legacy.query('listen tessera_token_changes')
    const invalidated = vi.spyOn(b.tokens.directory, 'invalidate')
    try {
      await until(async () => c.feedLive)
      // Same username on the other deployment: its notice would drop b's entry for "cached".
      await c.accounts.create('cached', undefined, [], cliActor)
      // Then one of this deployment's own: the feed keeps order, so once b has it, it has all.
      await a.accounts.create('probe', undefined, [], cliActor)
      await until(async () => invalidated.mock.calls.some(([name]) => name === 'probe'))
      expect(invalidated.mock.calls.map(([name]) => name)).toEqual(['probe'])
      await until(async () => heard.length >= 2)
      expect(heard).toEqual([
        'tessera_token_changes account:cached',
        'tessera_token_changes account:probe',
      ])
    } finally {
      invalidated.mockRestore()
      await legacy.end()
      await c.close()
      await other.drop()
    }
  })

  it('is named after the schema, hashed when the name would pass 63 bytes', () => {
    expect(changesChannel(undefined)).toBe('tessera_token_changes')
    expect(changesChannel('tessera_fleet_abc')).toBe('tessera_token_changes_tessera_fleet_abc')
    expect(changesChannel('s'.repeat(41))).toBe(`tessera_token_changes_${'s'.repeat(41)}`)
    expect(changesChannel('s'.repeat(42))).toBe(
      'tessera_token_changes_7bbed07d913f65baca2e07d1498ad328',
    )
  })
})
