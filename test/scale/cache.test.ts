import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
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
