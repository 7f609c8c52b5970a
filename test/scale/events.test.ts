import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { auditEvent, cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
import { auditRepo } from '../../src/db/audit.js'
import type { OutboxEvent } from '../../src/db/outbox.js'
import { fleetEnv } from './env.js'

/**
 * The outbox on PostgreSQL, followed from another instance: events arrive in commit order (the
 * outbox lock), and a number left unused by a rollback does not hold back what follows.
 */

const fleet = fleetEnv()
let a: AppContext
let b: AppContext

beforeAll(async () => {
  const config = toConfig({ ...fleet.env, REDIS_URL: undefined, DATA_DIR: '/tmp' } as never)
  a = await createContext(config)
  b = await createContext(config)
})
afterAll(async () => {
  await a?.close()
  await b?.close()
  await fleet.drop()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Follows b's feed from the newest event. */
async function follow() {
  const got: OutboxEvent[] = []
  const stop = b.events.subscribe(await b.events.newest(), (events) => got.push(...events))
  return { got, stop }
}

const until = async (check: () => boolean, ms = 3000) => {
  const since = performance.now()
  while (!check()) {
    if (performance.now() - since > ms) throw new Error(`not within ${ms} ms`)
    await sleep(5)
  }
  return performance.now() - since
}

describe('the event outbox across two instances', () => {
  it("delivers one instance's events to the other's followers within a second", async () => {
    const { got, stop } = await follow()
    const started = performance.now()
    await a.accounts.create('followed', undefined, [], cliActor)
    await until(() => got.some((e) => e.action === 'account.created'), 1_000)
    const ms = performance.now() - started
    process.stdout.write(
      `outbox: an event made on one instance reached the other in ${ms.toFixed(0)} ms\n`,
    )
    stop()
    expect(JSON.parse(got[0]?.body ?? '{}').account).toBe('followed')
  })

  it('orders events by commit: a writer waits for the transaction before it', async () => {
    const { got, stop } = await follow()
    let commit = () => {}
    const gate = new Promise<void>((open) => {
      commit = open
    })
    const slow = a.db.transaction().execute(async (trx) => {
      await auditRepo.insert(
        trx,
        auditEvent(Date.now(), 'signing_key.added', cliActor, { type: 'signing_key', id: 'slow' }),
      )
      await gate
    })
    await sleep(100) // the slow transaction holds the outbox
    const behind = b.accounts.create('behind', undefined, [], cliActor)
    await sleep(500)
    expect(got).toEqual([])
    commit()
    await slow
    await behind
    await until(() => got.length >= 2)
    stop()
    expect(got.map((e) => e.action)).toEqual(['signing_key.added', 'account.created'])
    expect(got.map((e) => e.seq)).toEqual([0, 1].map((n) => (got[0]?.seq ?? 0) + n))
  })

  it('skips a number left by a transaction rolled back, at once', async () => {
    const { got, stop } = await follow()
    await a.db
      .transaction()
      .execute(async (trx) => {
        await auditRepo.insert(
          trx,
          auditEvent(Date.now(), 'signing_key.added', cliActor, {
            type: 'signing_key',
            id: 'gone',
          }),
        )
        throw new Error('rolled back')
      })
      .catch(() => {})
    const started = performance.now()
    await a.accounts.create('after-rollback', undefined, [], cliActor)
    const ms = await until(() => got.length >= 1, 1_000)
    stop()
    process.stdout.write(
      `outbox: an event behind a rolled-back number arrived in ${(performance.now() - started).toFixed(0)} ms\n`,
    )
    expect(ms).toBeLessThan(1_000)
    expect(got.map((e) => e.action)).toEqual(['account.created'])
  })
})
