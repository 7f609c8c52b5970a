import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { toConfig } from '../../src/config.js'
import { type AppContext, createContext } from '../../src/context.js'
import { type OutboxEvent, outboxRepo } from '../../src/db/outbox.js'
import { webhookRepo } from '../../src/db/webhooks.js'
import { Receiver, waitFor } from '../http/webhook-receiver.js'
import { fleetEnv } from './env.js'

/**
 * Two instances on one PostgreSQL database, both dispatching: their leases (claimed with
 * FOR UPDATE SKIP LOCKED) make each event reach each endpoint exactly once, in order, while
 * events are committed concurrently on both and the receiver fails now and then.
 */

const fleet = fleetEnv()
const dir = mkdtempSync(path.join(tmpdir(), 'tessera-webhooks-fleet-'))
let rx: Receiver
let first: AppContext
let second: AppContext

beforeAll(async () => {
  rx = await Receiver.start()
  const config = toConfig({
    ...fleet.env,
    DATA_DIR: dir,
    WEBHOOK_ALLOW_PRIVATE: '1',
    WEBHOOK_CA_FILE: rx.caFile,
  })
  first = await createContext(config)
  second = await createContext(config)
})
afterAll(async () => {
  await Promise.all([first?.close(), second?.close()])
  await rx?.close()
  await fleet.drop()
  rmSync(dir, { recursive: true, force: true })
})

describe('webhooks on two instances sharing PostgreSQL', () => {
  it('deliver each event once per endpoint, in order', async () => {
    const start = await outboxRepo.newest(first.db)
    // Each endpoint's creation is an event after `start`: /every gets that of /some, never its
    // own; /some filters both out.
    const every = await first.webhooks.service.create(rx.url('/every'), undefined, cliActor)
    const some = await second.webhooks.service.create(
      rx.url('/some'),
      ['account.created'],
      cliActor,
    )
    // The first attempt at every 7th event an endpoint gets fails: retried within a second.
    const seen = new Map<string, number>()
    rx.respond = (r) => {
      const key = `${r.path} ${r.event.id}`
      if (seen.has(key)) return 200
      seen.set(key, seen.size)
      return seen.size % 7 === 0 ? 500 : 200
    }
    // Which instances won claims: both should serve.
    const claim = webhookRepo.claim
    const winners = new Set<string>()
    vi.spyOn(webhookRepo, 'claim').mockImplementation(async (db, c) => {
      const claimed = await claim(db, c)
      if (claimed !== undefined) winners.add(c.owner)
      return claimed
    })
    first.webhooks.start()
    second.webhooks.start()

    // Changes committed concurrently on both instances: sequence numbers may become visible
    // out of order, which the dispatchers must wait out rather than skip.
    const n = 40
    for (let i = 0; i < n; i += 8) {
      await Promise.all(
        Array.from({ length: 8 }, (_, k) => {
          const ctx = (i + k) % 2 === 0 ? first : second
          return ctx.accounts.create(`hook-${i + k}`, undefined, [], cliActor)
        }),
      )
    }
    const events = await outboxRepo.after(first.db, start, 1000)
    const targetOf = (e: OutboxEvent) => JSON.parse(e.body).target.id
    const created = events.filter((e) => e.action === 'webhook.created')
    expect(created.map(targetOf)).toEqual([every.id, some.id])
    const expected = (skip: (e: OutboxEvent) => boolean) =>
      events.filter((e) => !skip(e)).map((e) => e.seq)
    const want = {
      '/every': expected((e) => e === created[0]),
      '/some': expected((e) => e.action !== 'account.created'),
    }
    expect(want['/every']).toEqual([created[1]?.seq, ...want['/some']])
    expect(want['/some']).toHaveLength(n)

    const seqOf = new Map<string, number>()
    for (const e of events) seqOf.set(JSON.parse(e.body).id, e.seq)
    const accepted = (pathname: string) =>
      rx.accepted.filter((r) => r.path === pathname).map((r) => seqOf.get(r.event.id))
    await waitFor(
      () =>
        accepted('/every').length >= want['/every'].length &&
        accepted('/some').length >= want['/some'].length,
      30_000,
    )
    // Anything still in flight would show up as a duplicate.
    await new Promise((r) => setTimeout(r, 500))
    expect(accepted('/every')).toEqual(want['/every'])
    expect(accepted('/some')).toEqual(want['/some'])
    expect(rx.received.some((r) => r.answer === 500)).toBe(true)
    expect(winners.size).toBe(2)

    for (const [hook, count] of [
      [every.id, want['/every'].length],
      [some.id, want['/some'].length],
    ] as const) {
      const list = await first.webhooks.service.deliveries(hook, undefined, 100)
      expect(list).toHaveLength(count)
      expect(list.every((d) => d.state === 'delivered')).toBe(true)
    }
  })
})
