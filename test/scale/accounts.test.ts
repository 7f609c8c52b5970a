import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Actor, cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
import { fleetEnv } from './env.js'

/**
 * Operators act on one instance; every other instance of the fleet follows within the change
 * feed's bound: a disabled or deleted account's tokens stop working, and usage counted on
 * every instance adds up.
 */

const fleet = fleetEnv()
const operator: Actor = { type: 'admin', id: 'ops' }
let a: AppContext
let b: AppContext

const until = async (check: () => Promise<boolean>, ms = 3000) => {
  const since = performance.now()
  while (performance.now() - since < ms) {
    if (await check()) return performance.now() - since
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`not within ${ms} ms`)
}
const codeOn = async (ctx: AppContext, token: string) => (await ctx.tokens.validate(token)).code

beforeAll(async () => {
  const config = toConfig({ ...fleet.env, REDIS_URL: undefined, DATA_DIR: '/tmp' } as never)
  a = await createContext(config)
  b = await createContext(config)
  await until(async () => a.feedLive && b.feedLive)
})
afterAll(async () => {
  await a?.close()
  await b?.close()
  await fleet.drop()
})

/** An account with an sk and a tk, each validated (so cached) on instance b. */
async function accountWithTokens(username: string) {
  const account = await a.accounts.create(username, undefined, [], cliActor)
  const holder = a.accounts.holder(account)
  const sk = await a.tokens.create(account, holder, { scopes: ['tokens:read'] }, cliActor)
  const tk = await a.tokens.createTemporary(
    account,
    holder,
    { expires: new Date(Date.now() + 600_000).toISOString() },
    cliActor,
  )
  const tokens = [account.defaultToken.token as string, sk.token as string, tk.token]
  for (const t of tokens) expect(await codeOn(b, t)).toBe('TokenValid')
  for (const t of tokens) expect(await codeOn(b, t)).toBe('TokenValid')
  return { sk, tokens }
}

describe('accounts across two instances', () => {
  it('disabling revokes every token on the other instance within one second; enabling restores them', async () => {
    const { tokens } = await accountWithTokens('disabled-one')
    await a.accounts.setDisabled('disabled-one', true, operator)
    const ms = await until(async () => {
      const codes = await Promise.all(tokens.map((t) => codeOn(b, t)))
      return codes.every((c) => c === 'TokenRevoked')
    })
    expect(ms).toBeLessThan(1000)
    await a.accounts.setDisabled('disabled-one', false, operator)
    const back = await until(async () => {
      const codes = await Promise.all(tokens.map((t) => codeOn(b, t)))
      return codes.every((c) => c === 'TokenValid')
    })
    expect(back).toBeLessThan(1000)
  })

  it('deleting revokes every token on the other instance within one second', async () => {
    const { tokens } = await accountWithTokens('deleted-one')
    await a.accounts.remove('deleted-one', operator)
    const ms = await until(async () => {
      const codes = await Promise.all(tokens.map((t) => codeOn(b, t)))
      return codes.every((c) => c === 'TokenRevoked')
    })
    expect(ms).toBeLessThan(1000)
    // Its temporary token could still be live for an hour: the name is not free before.
    await expect(b.accounts.create('deleted-one', undefined, [], cliActor)).rejects.toMatchObject({
      details: expect.stringMatching(
        /^account deleted-one was deleted at .*; the name can be used again an hour later$/,
      ),
    })
    for (const t of tokens) expect(await codeOn(a, t)).toBe('TokenRevoked')
  })

  it('a change of plan narrows the tokens on the other instance within one second', async () => {
    const account = await a.accounts.create('shrinking', 'pro', [], cliActor)
    const holder = a.accounts.holder(account)
    const sk = await a.tokens.create(
      account,
      holder,
      { scopes: ['analytics:read', 'tokens:read'] },
      cliActor,
    )
    const scopesOn = async () => {
      const v = await b.tokens.validate(sk.token as string)
      return v.code === 'TokenValid' ? [...v.principal.scopes].sort() : []
    }
    expect(await scopesOn()).toEqual(['analytics:read', 'tokens:read'])
    await a.accounts.change('shrinking', { plan: 'standard' }, operator)
    const ms = await until(async () => (await scopesOn()).join() === 'tokens:read')
    expect(ms).toBeLessThan(1000)
  })

  it('adds up the usage counted on both instances', async () => {
    const { sk } = await accountWithTokens('busy')
    await a.usage.flush()
    await b.usage.flush()
    const before = (await a.usage.activity(sk.id)).hours.reduce((n, h) => n + h.count, 0)
    // Validated and metered as a request does (the validator alone counts nothing).
    const use = async (ctx: AppContext) =>
      ctx.usage.countValidation(await ctx.tokens.validate(sk.token as string))
    for (let i = 0; i < 5; i++) await use(a)
    for (let i = 0; i < 3; i++) await use(b)
    await Promise.all([a.usage.flush(), b.usage.flush()])
    const activity = await b.usage.activity(sk.id)
    expect(activity.hours.reduce((n, h) => n + h.count, 0) - before).toBe(8)
    expect(activity.lastUsed).toBe(new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString())
  })
})
