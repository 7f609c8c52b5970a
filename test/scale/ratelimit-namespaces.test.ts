import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { toConfig } from '../../src/config.js'
import { createContext } from '../../src/context.js'
import type { Harness } from '../helpers.js'
import { admin, adminEnv } from '../http/admin-client.js'
import { awayFromWindowEdge, fleetEnv } from './env.js'

/** Namespace counts shared by two instances, and overrides in force on both within a second. */
const minute = 60_000

describe('the namespace API on two instances on PostgreSQL and Redis', () => {
  it('share counts, and an override changed on one holds on the other within a second', async () => {
    const fleet = fleetEnv()
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-ns-'))
    const config = toConfig({
      ...fleet.env,
      DATA_DIR: dir,
      ADMIN_KEYS: adminEnv.ADMIN_KEYS,
      RATE_LIMIT_PER_MINUTE: '100000',
      SHED_DELAY_MS: '0',
    })
    const instances: Awaited<ReturnType<typeof start>>[] = []
    async function start() {
      const ctx = await createContext(config, { now: () => Date.now() })
      const app = buildApp(ctx)
      await app.ready()
      return { ctx, app }
    }
    try {
      instances.push(await start(), await start())
      const [a, b] = instances.map((i) => i.app) as [Harness['app'], Harness['app']]
      await awayFromWindowEdge(10)
      const reset = (Math.floor(Date.now() / minute) + 1) * minute
      const ask = { identifier: 'shared-1', limit: 3, duration: minute }
      const on = async (app: Harness['app'], body: unknown = ask) =>
        (await admin(app, 'POST', '/ratelimits/signups', body)).body
      expect([await on(a), await on(a), await on(b), await on(a), await on(b)]).toEqual([
        { success: true, limit: 3, remaining: 2, reset },
        { success: true, limit: 3, remaining: 1, reset },
        { success: true, limit: 3, remaining: 0, reset },
        { success: false, limit: 3, remaining: 0, reset },
        { success: false, limit: 3, remaining: 0, reset },
      ])

      const peek = { identifier: 'bob@acme.com', limit: 2, duration: minute, cost: 0 }
      /** How long until `app` applies `expected`, polled every 20 ms (at most 2 s). */
      const until = async (app: Harness['app'], expected: number) => {
        const since = performance.now()
        while ((await on(app, peek)).limit !== expected && performance.now() - since < 2000) {
          await new Promise((r) => setTimeout(r, 20))
        }
        return performance.now() - since
      }
      const took: number[] = []
      for (let round = 0; round < 3; round++) {
        expect((await on(b, peek)).limit).toBe(2) // b's cache is warm
        const path = `/ratelimits/signups/overrides/${encodeURIComponent('*@acme.com')}`
        await admin(a, 'PUT', path, { limit: 50, duration: minute })
        expect((await on(a, peek)).limit).toBe(50)
        took.push(await until(b, 50))
        expect((await admin(a, 'DELETE', path)).status).toBe(204)
        took.push(await until(b, 2))
      }
      for (const ms of took) expect(ms).toBeLessThan(1000)
    } finally {
      for (const { app, ctx } of instances) {
        await app.close()
        await ctx.close()
      }
      await fleet.drop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
