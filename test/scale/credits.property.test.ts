import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createVerifier, type Verifier } from '../../packages/verifier/src/index.js'
import { buildApp } from '../../src/app.js'
import { cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
import { randomAlnum } from '../../src/ids.js'
import type { Refill } from '../../src/usage/credits.js'
import { fleetEnv } from './env.js'

/**
 * Issue 33, done means 2: 2 to 4 Tessera instances on one PostgreSQL database and 2 to 4
 * verifiers (leases over HTTP) spend one token's and one account's credits in interleavings
 * fast-check draws. Grants come off the balance at once (docs/credits.md), so the bound is 0:
 * what the verifiers let through never exceeds the balance, and once they have closed (handing
 * back what their leases had left) the balance is the start minus exactly what they spent. A
 * daily refill, at its moment, sets the balance, and no lease of the period before is spent after.
 */

const fleet = fleetEnv()
const adminKey = `credits-${randomBytes(24).toString('base64url')}`
const instances: Array<{ ctx: AppContext; app: FastifyInstance; url: string }> = []
const dayMs = 86_400_000

beforeAll(async () => {
  const config = toConfig({
    ...fleet.env,
    REDIS_URL: undefined,
    DATA_DIR: '/tmp',
    ADMIN_KEYS: `prop:${adminKey}`,
    RATE_LIMIT_PER_MINUTE: '1000000',
    SHED_DELAY_MS: '0',
  } as never)
  for (let i = 0; i < 4; i++) {
    // Tessera's clock is the process's Date: the refill test moves both sides together.
    const ctx = await createContext(config, { now: () => Date.now() })
    const app = buildApp(ctx)
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo
    instances.push({ ctx, app, url: `http://127.0.0.1:${port}` })
  }
})
afterAll(async () => {
  vi.useRealTimers()
  for (const { app, ctx } of instances) {
    await app.close()
    await ctx.close()
  }
  await fleet.drop()
})

const first = () => (instances[0] as (typeof instances)[number]).ctx

/** An account with two tokens: `own` carries credits of its own, both spend the account's. */
async function meteredAccount(tokenCredits: number, accountCredits: number, refill?: Refill) {
  const ctx = first()
  const name = `cr${randomAlnum(12)}`
  const account = await ctx.accounts.create(name, undefined, [], cliActor)
  const make = () =>
    ctx.tokens.create(account, ctx.accounts.holder(account), { scopes: ['styles:read'] }, cliActor)
  const own = (await make()) as { id: string; token: string }
  const other = (await make()) as { id: string; token: string }
  const rf = refill === undefined ? {} : { refill }
  await ctx.credits.set({ account: name, tokenId: own.id }, { remaining: tokenCredits, ...rf })
  await ctx.credits.set({ account: name }, { remaining: accountCredits, ...rf })
  const credits = (tokenId?: string) =>
    first().credits.get({ account: name, ...(tokenId ? { tokenId } : {}) })
  const remaining = async (tokenId?: string) => (await credits(tokenId))?.remaining
  return { name, own, other, credits, remaining }
}

async function startVerifiers(count: number, on: number, maxLeaseCredits: number) {
  const verifiers = Array.from({ length: count }, (_, i) =>
    createVerifier({
      url: (instances[i % on] as (typeof instances)[number]).url,
      adminKey,
      maxLeaseCredits,
      reportEveryMs: 60_000,
      onError: () => {},
    }),
  )
  await Promise.all(verifiers.map((v) => v.ready()))
  return verifiers
}

const step = fc.record({
  verifier: fc.nat(3),
  own: fc.boolean(),
  calls: fc.integer({ min: 1, max: 8 }),
  cost: fc.integer({ min: 0, max: 3 }),
  settle: fc.boolean(),
})
type Step = { verifier: number; own: boolean; calls: number; cost: number; settle: boolean }

/**
 * Runs the steps (a step's calls at once; awaited when `settle`, else left running beside the
 * next steps) and answers what the valid verifications spent of the token and of the account.
 */
async function run(verifiers: Verifier[], tokens: { own: string; other: string }, steps: Step[]) {
  const spent = { token: 0, account: 0 }
  const running: Promise<void>[] = []
  for (const s of steps) {
    const v = verifiers[s.verifier % verifiers.length] as Verifier
    const calls = Array.from({ length: s.calls }, async () => {
      const answer = await v.verify(s.own ? tokens.own : tokens.other, { cost: s.cost })
      if (!answer.valid) {
        expect(answer.reason).toBe('CreditsExhausted')
        return
      }
      spent.account += s.cost
      if (s.own) spent.token += s.cost
    })
    if (s.settle) await Promise.all(calls)
    else running.push(...calls)
  }
  await Promise.all(running)
  return spent
}

// First: the refill test below moves the clock years ahead and back, and Tessera's meter keeps
// counting into the window it opened then.
describe('verifier counts on Tessera', () => {
  it('adds each verifier decision once to the usage; its introspections are not counted again', async () => {
    const ctx = first()
    const name = `ct${randomAlnum(12)}`
    const account = await ctx.accounts.create(name, undefined, [], cliActor)
    const make = () =>
      ctx.tokens.create(
        account,
        ctx.accounts.holder(account),
        { scopes: ['styles:read'] },
        cliActor,
      )
    const live = (await make()) as { id: string; token: string }
    const gone = (await make()) as { id: string; token: string }
    await ctx.tokens.remove(account, gone.id, cliActor)
    const from = Date.now()
    const [a, b] = (await startVerifiers(2, 2, 10)) as [Verifier, Verifier]
    for (let i = 0; i < 3; i++) await a.verify(live.token, { scope: 'styles:read' })
    await b.verify(live.token, { scope: 'tokens:write' })
    await b.verify(gone.token)
    await b.verify(gone.token)
    await a.verify('not a token')
    await Promise.all([a.close(), b.close()])
    for (const { ctx: c } of instances) await c.usage.flush()
    const range = { from, to: Date.now() + 60_000, resolution: 'minute' as const }
    const byToken = Object.fromEntries(
      (await ctx.usage.byToken(name, range)).map((t) => [t.token, t.outcomes]),
    )
    // The verifiers' decisions alone: they introspect with `count: false`.
    expect(byToken).toEqual({
      [live.id]: { valid: 3, scope_missing: 1 },
      [gone.id]: { revoked: 2 },
    })
  })
})

describe('credits across instances and verifiers', () => {
  it('never lets through more than the balance, and loses nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        fc.integer({ min: 2, max: 4 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 1, max: 30 }),
        fc.array(step, { minLength: 1, maxLength: 25 }),
        async (on, count, tokenCredits, accountCredits, lease, steps) => {
          const { own, other, remaining } = await meteredAccount(tokenCredits, accountCredits)
          const verifiers = await startVerifiers(count, on, lease)
          const spent = await run(verifiers, { own: own.token, other: other.token }, steps)
          expect(spent.token).toBeLessThanOrEqual(tokenCredits)
          expect(spent.account).toBeLessThanOrEqual(accountCredits)
          await Promise.all(verifiers.map((v) => v.close()))
          expect(await remaining(own.id)).toBe(tokenCredits - spent.token)
          expect(await remaining()).toBe(accountCredits - spent.account)
        },
      ),
      { numRuns: 25 },
    )
  })

  it('sets the balance at the moment of a refill; leases of the period before end there', async () => {
    let day = 0
    // The verifiers measure a lease's end on the monotonic clock (performance.now() plus
    // Tessera's ttlMs): it moves with Date here, by advancing the fake clock.
    vi.useFakeTimers({ toFake: ['Date', 'performance'] })
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 2, max: 4 }),
          fc.integer({ min: 0, max: 30 }),
          fc.integer({ min: 1, max: 30 }),
          fc.array(step, { minLength: 1, maxLength: 12 }),
          fc.array(step, { minLength: 1, maxLength: 12 }),
          async (count, start, amount, before, after) => {
            // 30 s before a midnight of its own (UTC): a daily refill's moment.
            const midnight = Date.UTC(2031, 0, 2) + day++ * dayMs
            vi.setSystemTime(midnight - 30_000)
            const refill: Refill = { interval: 'daily', amount }
            const { own, other, credits, remaining } = await meteredAccount(start, start, refill)
            const verifiers = await startVerifiers(count, count, 10)
            const tokens = { own: own.token, other: other.token }
            const old = await run(verifiers, tokens, before)
            expect(old.token).toBeLessThanOrEqual(start)
            expect(old.account).toBeLessThanOrEqual(start)
            const set = new Date(midnight - 30_000).toISOString()
            vi.advanceTimersByTime(29_999)
            expect((await credits(own.id))?.period).toBe(set)
            expect((await credits())?.period).toBe(set)
            vi.advanceTimersByTime(1)
            for (const balance of [await credits(own.id), await credits()]) {
              expect(balance).toMatchObject({
                remaining: amount,
                period: new Date(midnight).toISOString(),
              })
            }
            // What the verifiers still hold of the period before is not spent in this one.
            const spent = await run(verifiers, tokens, after)
            expect(spent.token).toBeLessThanOrEqual(amount)
            expect(spent.account).toBeLessThanOrEqual(amount)
            await Promise.all(verifiers.map((v) => v.close()))
            expect(await remaining(own.id)).toBe(amount - spent.token)
            expect(await remaining()).toBe(amount - spent.account)
          },
        ),
        { numRuns: 10 },
      )
    } finally {
      vi.useRealTimers()
    }
  })
})
