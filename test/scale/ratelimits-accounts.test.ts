import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
import { admin, adminEnv } from '../http/admin-client.js'
import { fleetEnv } from './env.js'

/**
 * An account's rate limits set on one instance are in force on another within a second (the
 * change feed tells it; it reads the account anew), and counted as one across both (Redis).
 */

const fleet = fleetEnv()
const instances: Array<{ ctx: AppContext; app: FastifyInstance }> = []
const hourMs = 3_600_000

beforeAll(async () => {
  const config = toConfig({ ...fleet.env, DATA_DIR: '/tmp', ...adminEnv } as never)
  for (let i = 0; i < 2; i++) {
    const ctx = await createContext(config)
    const app = buildApp(ctx)
    await app.ready()
    instances.push({ ctx, app })
  }
  const since = performance.now()
  while (!instances.every((i) => i.ctx.feedLive) && performance.now() - since < 5000) {
    await new Promise((r) => setTimeout(r, 10))
  }
})
afterAll(async () => {
  for (const { app, ctx } of instances) {
    await app.close()
    await ctx.close()
  }
  await fleet.drop()
})

const on = (i: number) => instances[i] as (typeof instances)[number]

describe('an account’s rate limits across two instances', () => {
  it('are in force on the other instance within a second, and count as one there', async () => {
    // The hour's window must not end during the test.
    const into = Date.now() % hourMs
    if (into > hourMs - 15_000) await new Promise((r) => setTimeout(r, hourMs - into + 50))
    const account = await on(0).ctx.accounts.create('spread', undefined, [], cliActor)
    const token = account.defaultToken.token as string
    const retrieve = (i: number) =>
      on(i).app.inject({ method: 'GET', url: `/tokens/v2?access_token=${token}` })
    // Instance 1 knows the account (and its limits) before the change.
    const known = await retrieve(1)
    expect([known.statusCode, known.headers['ratelimit-policy']]).toEqual([
      200,
      '"requests";q=100;w=60',
    ])

    const hourly = { name: 'hourly', limit: 6, duration: hourMs }
    const set = await admin(on(0).app, 'PUT', '/accounts/spread/ratelimits', { limits: [hourly] })
    expect(set.status).toBe(200)
    const since = performance.now()
    for (;;) {
      const res = await retrieve(1)
      if (res.headers['ratelimit-policy'] === '"hourly";q=6;w=3600') break
      expect(performance.now() - since).toBeLessThan(1000)
      await new Promise((r) => setTimeout(r, 5))
    }
    const ms = performance.now() - since
    expect(ms).toBeLessThan(1000)

    // The request that saw it took one of 6 (those before it, under the old limits, none): 5
    // more pass across both instances, whichever answers.
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push((await retrieve(i % 2)).statusCode)
    expect(statuses.filter((s) => s === 200)).toHaveLength(5)
    expect(statuses.slice(5)).toEqual([429, 429, 429])
  })
})
