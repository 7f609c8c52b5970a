import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { outboxRepo } from '../../src/db/outbox.js'
import { webhookRepo } from '../../src/db/webhooks.js'
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js'
import { verifySignature } from '../../src/webhooks/signature.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { Receiver, waitFor } from './webhook-receiver.js'

/**
 * Webhooks end to end: a real dispatcher posting to a real local HTTPS receiver (trusted through
 * WEBHOOK_CA_FILE, reached with WEBHOOK_ALLOW_PRIVATE=1), on the test's clock.
 */

const iso = (ms: number) => new Date(ms).toISOString()
const hour = 3_600_000

describe('webhook delivery', () => {
  let h: Harness
  let rx: Receiver
  beforeEach(async () => {
    rx = await Receiver.start()
    h = await harness({ ...adminEnv, WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_CA_FILE: rx.caFile })
  })
  afterEach(async () => {
    await h.close()
    await rx.close()
  })

  const register = async (body: { url: string; events?: string[] }) => {
    const res = await admin(h.app, 'POST', '/webhooks', body)
    expect(res.status).toBe(201)
    return res.body as { id: string; secret: string }
  }
  const deliveries = async (id: string) => {
    const res = await admin(h.app, 'GET', `/webhooks/${id}/deliveries`)
    expect(res.status).toBe(200)
    // biome-ignore lint/suspicious/noExplicitAny: JSON answers
    return res.body as any[]
  }
  /** The audit events after the first `skip`, oldest first: what the webhooks should get. */
  const eventsSince = async (after: number) =>
    (await h.ctx.audit.list({ limit: 100 })).reverse().slice(after)
  /** Token changes through the API: create, update, delete; answers the holder's token. */
  const tokenChanges = async () => {
    const holder = await h.token('alice', all)
    const made = await call(h.app, 'POST', '/tokens/v2/alice', holder.token, {
      note: 'for the webhook',
      scopes: ['scopes:list'],
    })
    expect(made.status).toBe(200)
    const path = `/tokens/v2/alice/${made.body.id}`
    expect((await call(h.app, 'PATCH', path, holder.token, { note: 'renamed' })).status).toBe(200)
    expect((await call(h.app, 'DELETE', path, holder.token)).status).toBe(204)
    return { holder, made: made.body }
  }

  it('posts each event, signed, with its exact body, and records the attempt', async () => {
    const before = (await h.ctx.audit.list({ limit: 100 })).length
    const hook = await register({ url: rx.url() })
    expect(hook).toEqual({
      id: expect.stringMatching(/^wh_[0-9a-z]{19}$/),
      url: rx.url(),
      events: [],
      created: iso(T0),
      state: 'healthy',
      secret: expect.stringMatching(/^whsec_[\w-]{32}$/),
    })
    h.ctx.webhooks.start()
    const { holder, made } = await tokenChanges()
    await waitFor(() => rx.received.length === 4)

    const [own, ...expected] = await eventsSince(before)
    expect(own).toMatchObject({
      action: 'webhook.created',
      target: { type: 'webhook', id: hook.id },
    })
    expect(expected.map((e) => e.action)).toEqual([
      'token.created',
      'token.created',
      'token.updated',
      'token.deleted',
    ])
    // The accounts made before the endpoint existed are not delivered to it, nor the event of
    // its own creation.
    expect(rx.received.map((r) => r.event)).toEqual(expected)
    for (const r of rx.received) {
      expect(r.headers['content-type']).toBe('application/json')
      expect(r.headers['user-agent']).toBe('Tessera-Webhooks/1')
      expect(r.headers['tessera-event-id']).toBe(r.event.id)
      expect(r.headers['tessera-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
      expect(r.headers['tessera-signature']).toContain(`t=${T0 / 1000},`)
      expect(verifySignature(hook.secret, r.body, String(r.headers['tessera-signature']), T0)).toBe(
        true,
      )
    }
    const deleted = rx.received[3]
    expect(JSON.parse(deleted?.body ?? '')).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{13}[0-9a-z]{12}$/),
      at: iso(T0),
      action: 'token.deleted',
      actor: { type: 'token', id: holder.id, usage: 'sk' },
      target: { type: 'token', id: made.id },
      account: 'alice',
      address: '127.0.0.1',
      requestId: expect.any(String),
      details: { usage: 'sk' },
    })
    expect(deleted?.body).toBe(JSON.stringify(deleted?.event))

    const listed = await waitFor(async () => {
      const list = await deliveries(hook.id)
      return list.every((d) => d.state === 'delivered') && list.length === 4 && list
    })
    expect(listed.map((d) => d.eventId)).toEqual(expected.map((e) => e.id).reverse())
    expect(listed[0]).toEqual({
      eventId: expected[3]?.id,
      seq: expect.any(Number),
      action: 'token.deleted',
      state: 'delivered',
      created: iso(T0),
      attempts: [{ at: iso(T0), status: 200, durationMs: expect.any(Number) }],
    })
  })

  it('delivers only the actions of its filter; others get everything', async () => {
    const some = await register({
      url: rx.url('/some'),
      events: ['token.deleted', 'token.updated', 'webhook.created', 'webhook.deleted'],
    })
    const every = await register({ url: rx.url('/every') })
    const other = await register({ url: rx.url('/other'), events: ['token.deleted'] })
    expect((await admin(h.app, 'DELETE', `/webhooks/${other.id}`)).status).toBe(204)
    h.ctx.webhooks.start()
    await tokenChanges()
    await waitFor(() => rx.received.length === 11)
    const got = (path: string) =>
      rx.received.filter((r) => r.path === path).map((r) => [r.event.action, r.event.target.id])
    // Each endpoint gets the creation of those made after it, never its own.
    expect(got('/some')).toEqual([
      ['webhook.created', every.id],
      ['webhook.created', other.id],
      ['webhook.deleted', other.id],
      ['token.updated', expect.any(String)],
      ['token.deleted', expect.any(String)],
    ])
    expect(got('/every')).toEqual([
      ['webhook.created', other.id],
      ['webhook.deleted', other.id],
      ['token.created', expect.any(String)],
      ['token.created', expect.any(String)],
      ['token.updated', expect.any(String)],
      ['token.deleted', expect.any(String)],
    ])
    expect(got('/other')).toEqual([])
    // Recorded after the receiver counted them (it counts before it answers).
    const recorded = await waitFor(async () => {
      const l = await deliveries(some.id)
      return l.length === 5 && l.every((d) => d.state === 'delivered') && l
    })
    expect(recorded.map((d) => d.action)).toEqual([
      'token.deleted',
      'token.updated',
      'webhook.deleted',
      'webhook.created',
      'webhook.created',
    ])
  })

  it('delivers the warnings of token hygiene and policy changes to an endpoint that asks', async () => {
    const hooked = await register({
      url: rx.url('/hygiene'),
      events: ['token.expiring', 'token.retiring', 'token.idle', 'token_policy.changed'],
    })
    h.ctx.webhooks.start()
    const holder = await h.token('alice', all)
    const ends = iso(T0 + 2 * hour)
    const made = await call(h.app, 'POST', '/tokens/v2/alice', holder.token, {
      scopes: ['scopes:list'],
      expiresAt: ends,
    })
    expect(made.status).toBe(200)
    const policy = { idleDays: 30 }
    expect((await admin(h.app, 'PUT', '/accounts/alice/token-policy', policy)).status).toBe(200)
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    await waitFor(() => rx.received.length === 2)
    expect(
      rx.received.map((r) => [r.path, r.event.action, r.event.actor, r.event.details]),
    ).toEqual([
      ['/hygiene', 'token_policy.changed', { type: 'admin', id: 'k1' }, { policy, before: {} }],
      [
        '/hygiene',
        'token.expiring',
        { type: 'system' },
        { usage: 'sk', expiresAt: ends, threshold: '1d' },
      ],
    ])
    expect(rx.received[1]?.event.target).toEqual({ type: 'token', id: made.body.id })
    // Recorded after the receiver counted them (it counts before it answers).
    await waitFor(async () => {
      const states = (await deliveries(hooked.id)).map((d) => d.state)
      return states.length === 2 && states.every((s) => s === 'delivered')
    })
  })

  it('never sends an endpoint its own creation, even with webhook.created in its filter', async () => {
    const hook = await register({ url: rx.url(), events: ['webhook.created', 'token.deleted'] })
    const own = (await h.ctx.audit.list({ actions: ['webhook.created'], limit: 10 }))[0]
    expect(own?.target).toEqual({ type: 'webhook', id: hook.id })
    h.ctx.webhooks.start()
    const { made } = await tokenChanges()
    await waitFor(() => rx.received.length === 1)
    // Anything else would show up.
    await new Promise((r) => setTimeout(r, 600))
    expect(rx.received.map((r) => [r.event.action, r.event.target.id])).toEqual([
      ['token.deleted', made.id],
    ])
    // Its cursor moved past its own event.
    await waitFor(
      async () =>
        (await webhookRepo.get(h.ctx.db, hook.id))?.lastSeq === (await outboxRepo.newest(h.ctx.db)),
    )
    expect((await deliveries(hook.id)).map((d) => d.action)).toEqual(['token.deleted'])
  })

  it('retries through a receiver that fails and is down; every event arrives once, in order', async () => {
    const before = (await h.ctx.audit.list({ limit: 100 })).length
    rx.respond = () => 500
    const hook = await register({ url: rx.url() })
    h.ctx.webhooks.start()
    await tokenChanges()
    await waitFor(() => rx.received.length === 1)
    const [head] = await waitFor(async () => {
      const list = await deliveries(hook.id)
      return list.length === 1 && list
    })
    expect(head).toMatchObject({ state: 'pending', attempts: [{ status: 500, error: 'HTTP 500' }] })
    expect(Date.parse(head.nextAttempt) - T0).toBeLessThanOrEqual(1000)
    expect((await admin(h.app, 'GET', `/webhooks/${hook.id}`)).body.state).toBe('failing')
    // The next events wait for the first.
    await new Promise((r) => setTimeout(r, 600))
    expect(rx.received).toHaveLength(1)

    // Generous waits: on a loaded CI machine (Node 22, beside the browser suite) 8 s once did
    // not suffice for the retry against the stopped receiver.
    await rx.down()
    h.clock.now += hour
    await waitFor(async () => (await deliveries(hook.id))[0]?.attempts.length === 2, 30_000)
    await rx.up()
    rx.respond = () => 200
    h.clock.now += hour
    await waitFor(() => rx.accepted.length === 4, 30_000)

    // Its own creation first, which it is not sent.
    const [own, ...expected] = (await eventsSince(before)).map((e) => e.id)
    expect(own).toBe((await h.ctx.audit.list({ actions: ['webhook.created'], limit: 1 }))[0]?.id)
    const accepted = rx.accepted.map((r) => r.event.id)
    expect(accepted).toEqual(expected)
    expect(new Set(accepted).size).toBe(4)
    // The receiver counts a request before it answers, so the last delivery may not be
    // recorded yet: wait for all four, or the first one's row is read as the third newest.
    const list = await waitFor(async () => {
      const l = await deliveries(hook.id)
      return l.length === 4 && l.every((d) => d.state === 'delivered') && l
    })
    const first = list.at(-1)
    expect(first.attempts.map((a: { status: number | null }) => a.status)).toEqual([500, null, 200])
    expect(first.attempts[1].error).toMatch(/ECONNREFUSED/)
    expect(first.attempts.map((a: { at: string }) => a.at)).toEqual([
      iso(T0),
      iso(T0 + hour),
      iso(T0 + 2 * hour),
    ])
    expect(list.slice(0, 3).map((d) => d.attempts.length)).toEqual([1, 1, 1])
    expect((await admin(h.app, 'GET', `/webhooks/${hook.id}`)).body.state).toBe('healthy')
  }, 90_000)

  it('gives an event up 24 hours after it happened, then moves on', async () => {
    let doomed: string | undefined
    rx.respond = (r) => {
      doomed ??= r.event.id
      return r.event.id === doomed ? 500 : 200
    }
    const hook = await register({ url: rx.url() })
    h.ctx.webhooks.start()
    await h.token('alice', all)
    await h.token('bob', all)
    await waitFor(() => rx.received.length === 1)
    const attempts = async () => (await deliveries(hook.id)).at(-1)?.attempts.length
    await waitFor(async () => (await attempts()) === 1)

    h.clock.now = T0 + 23 * hour
    await waitFor(async () => (await attempts()) === 2)
    expect((await deliveries(hook.id))[0]).toMatchObject({ state: 'pending' })
    expect(rx.accepted).toHaveLength(0)

    h.clock.now = T0 + 25 * hour
    await waitFor(() => rx.accepted.length === 1)
    const list = await waitFor(async () => {
      const l = await deliveries(hook.id)
      return l.length === 2 && l[0].state === 'delivered' && l
    })
    expect(list[1]).toMatchObject({ eventId: doomed, state: 'failed', created: iso(T0) })
    expect(list[1].nextAttempt).toBeUndefined()
    expect(list[1].attempts.map((a: { at: string }) => a.at)).toEqual([
      iso(T0),
      iso(T0 + 23 * hour),
      iso(T0 + 25 * hour),
    ])
    expect(rx.accepted[0]?.event.account).toBe('bob')
  })

  it('after an outage of days, gives each event older than 24 hours one attempt, then moves on', async () => {
    rx.respond = () => 500
    const hook = await register({ url: rx.url() })
    h.ctx.webhooks.start()
    await h.token('alice', all)
    await h.token('bob', all)
    await h.token('alice', all)
    await waitFor(async () => (await deliveries(hook.id)).length === 1)

    // Three days later, the receiver still failing: the backlog is failed, one attempt each.
    h.clock.now = T0 + 72 * hour
    const list = await waitFor(async () => {
      const l = await deliveries(hook.id)
      return l.length === 3 && l.every((d) => d.state === 'failed') && l
    })
    expect(list.slice(0, 2).map((d) => d.attempts.length)).toEqual([1, 1])
    for (const d of list) {
      expect(d.attempts.at(-1)).toMatchObject({ at: iso(T0 + 72 * hour), status: 500 })
      expect(d.nextAttempt).toBeUndefined()
    }
    // What happens once it answers again is delivered.
    rx.respond = () => 200
    await h.token('bob', all)
    await waitFor(() => rx.accepted.length === 1)
    expect(rx.accepted[0]?.event).toMatchObject({ account: 'bob', at: iso(T0 + 72 * hour) })
  })

  it('keeps the outbox events an endpoint has still to handle past their retention', async () => {
    const hook = await register({ url: rx.url() })
    const cursor = (await webhookRepo.get(h.ctx.db, hook.id))?.lastSeq ?? -1
    await h.token('alice', all)
    await h.token('bob', all)
    // Past EVENT_RETENTION_HOURS (168): only what the endpoint has handled goes.
    h.clock.now = T0 + 200 * hour
    await h.ctx.prune()
    expect(await outboxRepo.oldest(h.ctx.db)).toBeGreaterThan(cursor)
    // Its own creation, which it skips, then the two it is sent.
    expect(
      (await outboxRepo.after(h.ctx.db, cursor, 10)).map((e) => [e.action, e.account]),
    ).toEqual([
      ['webhook.created', null],
      ['token.created', 'alice'],
      ['token.created', 'bob'],
    ])

    h.ctx.webhooks.start()
    await waitFor(() => rx.accepted.length === 2)
    expect(rx.accepted.map((r) => r.event.account)).toEqual(['alice', 'bob'])
    await waitFor(async () => (await webhookRepo.get(h.ctx.db, hook.id))?.state === 'healthy')
    await waitFor(async () => {
      await h.ctx.prune()
      return (await outboxRepo.oldest(h.ctx.db)) === undefined
    })
  })

  it('carries on after a write that committed but answered an error, sending nothing twice', async () => {
    const hook = await register({ url: rx.url() })
    // The first delivery's write commits, then the connection drops before the reply.
    const record = webhookRepo.record
    let dropped = false
    const spy = vi.spyOn(webhookRepo, 'record').mockImplementation(async (db, r) => {
      const written = await record(db, r)
      if (!dropped && r.delivery.state === 'delivered') {
        dropped = true
        throw new Error('Connection terminated unexpectedly')
      }
      return written
    })
    try {
      h.ctx.webhooks.start()
      await h.token('alice', all)
      await h.token('bob', all)
      await waitFor(() => rx.accepted.length >= 2)
      // Anything sent again would show up.
      await new Promise((r) => setTimeout(r, 600))
      expect(dropped).toBe(true)
      expect(rx.accepted.map((r) => r.event.account)).toEqual(['alice', 'bob'])
      const list = await deliveries(hook.id)
      expect(list.map((d) => [d.state, d.attempts.length])).toEqual([
        ['delivered', 1],
        ['delivered', 1],
      ])
    } finally {
      spy.mockRestore()
    }
  })

  it('records an event sent again after its cursor was set back, and carries on', async () => {
    const hook = await register({ url: rx.url() })
    const cursor = (await webhookRepo.get(h.ctx.db, hook.id))?.lastSeq ?? -1
    h.ctx.webhooks.start()
    await h.token('alice', all)
    await h.token('bob', all)
    await waitFor(async () => {
      const list = await deliveries(hook.id)
      return list.length === 2 && list.every((d) => d.state === 'delivered')
    })
    await h.ctx.webhooks.stop()
    await h.ctx.db.updateTable('webhook_endpoints').set({ last_seq: cursor }).execute()
    await h.token('alice', all)

    h.clock.now = T0 + hour
    const next = new WebhookDispatcher(h.ctx.webhooks.deps)
    next.start()
    try {
      await waitFor(() => rx.accepted.length === 5)
      // At least once: the two are sent again, and recorded as second attempts.
      const list = await waitFor(async () => {
        const l = await deliveries(hook.id)
        return l.length === 3 && l.every((d) => d.state === 'delivered') && l
      })
      expect(list.map((d) => d.attempts.map((a: { at: string }) => a.at))).toEqual([
        [iso(T0 + hour)],
        [iso(T0), iso(T0 + hour)],
        [iso(T0), iso(T0 + hour)],
      ])
      expect(list[2].created).toBe(iso(T0))
    } finally {
      await next.stop()
    }
  })

  it('pings at once and answers the delivery, delivered or failed', async () => {
    const hook = await register({ url: rx.url() })
    const ok = await admin(h.app, 'POST', `/webhooks/${hook.id}/ping`)
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({
      eventId: expect.stringMatching(/^[0-9a-f]{13}[0-9a-z]{12}$/),
      seq: null,
      action: 'ping',
      state: 'delivered',
      created: iso(T0),
      attempts: [{ at: iso(T0), status: 200, durationMs: expect.any(Number) }],
    })
    const [got] = rx.received
    expect(got?.event).toEqual({
      id: ok.body.eventId,
      at: iso(T0),
      action: 'ping',
      target: { type: 'webhook', id: hook.id },
    })
    expect(
      verifySignature(hook.secret, got?.body ?? '', String(got?.headers['tessera-signature']), T0),
    ).toBe(true)

    rx.respond = () => 503
    const failed = await admin(h.app, 'POST', `/webhooks/${hook.id}/ping`)
    expect(failed.body).toMatchObject({
      state: 'failed',
      attempts: [{ status: 503, error: 'HTTP 503' }],
    })
    expect((await deliveries(hook.id)).map((d) => d.state)).toEqual(['failed', 'delivered'])
  })

  it('stops promptly with an attempt in flight, which another dispatcher makes again', async () => {
    rx.respond = () => 'hang'
    const hook = await register({ url: rx.url() })
    h.ctx.webhooks.start()
    await h.token('alice', all)
    await waitFor(() => rx.received.length === 1)
    const since = performance.now()
    await h.ctx.webhooks.stop()
    expect(performance.now() - since).toBeLessThan(1000)
    expect(await deliveries(hook.id)).toEqual([])

    rx.respond = () => 200
    const next = new WebhookDispatcher(h.ctx.webhooks.deps)
    next.start()
    try {
      await waitFor(() => rx.accepted.length === 1)
      expect(rx.accepted[0]?.event.id).toBe(rx.received[0]?.event.id)
    } finally {
      await next.stop()
    }
  })
})

describe('webhook endpoints', () => {
  let h: Harness
  beforeEach(async () => {
    h = await harness({ ...adminEnv, WEBHOOK_ALLOW_PRIVATE: '1' })
  })
  afterEach(() => h.close())

  it('are created, listed in pages, read, revealed and removed', async () => {
    const made = []
    for (const n of [1, 2, 3]) {
      h.clock.now = T0 + n
      made.push((await admin(h.app, 'POST', '/webhooks', { url: `https://127.0.0.1/${n}` })).body)
    }
    const first = await admin(h.app, 'GET', '/webhooks?limit=2')
    expect(first.body.map((w: { id: string }) => w.id)).toEqual([made[0].id, made[1].id])
    expect(first.body[0]).toEqual({
      id: made[0].id,
      url: 'https://127.0.0.1/1',
      events: [],
      created: iso(T0 + 1),
      state: 'healthy',
    })
    expect(first.headers.link).toBe(
      `<https://127.0.0.1:8443/admin/v1/webhooks?limit=2&start=${made[1].id}>; rel="next"`,
    )
    const second = await admin(h.app, 'GET', `/webhooks?limit=2&start=${made[1].id}`)
    expect(second.body.map((w: { id: string }) => w.id)).toEqual([made[2].id])
    expect(second.headers.link).toBeUndefined()

    const one = await admin(h.app, 'GET', `/webhooks/${made[1].id}`)
    expect(one.status).toBe(200)
    expect(one.body.secret).toBeUndefined()
    expect((await admin(h.app, 'GET', `/webhooks/${made[1].id}/secret`)).body).toEqual({
      id: made[1].id,
      secret: made[1].secret,
    })

    expect((await admin(h.app, 'DELETE', `/webhooks/${made[1].id}`)).status).toBe(204)
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/secret'],
      ['DELETE', ''],
      ['POST', '/ping'],
      ['GET', '/deliveries'],
    ] as const) {
      const res = await admin(h.app, method, `/webhooks/${made[1].id}${path}`)
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ message: 'Not found', details: `no such webhook: ${made[1].id}` })
    }
    expect((await admin(h.app, 'GET', '/webhooks')).body).toHaveLength(2)
  })

  it.each([
    [{ url: 'https://127.0.0.1/', events: ['token.exploded'] }, 'no such event: token.exploded'],
    [{ url: 'ftp://127.0.0.1/' }, 'url must be an https:// or http:// URL'],
    [{ url: 'not a url' }, 'url is not an absolute URL'],
    [{ url: 'https://u:p@127.0.0.1/' }, 'url must not carry a user name or password'],
    [{ url: `https://127.0.0.1/${'é'.repeat(1000)}` }, 'url is longer than 2048 once normalised'],
    [{ url: 'https://nowhere.invalid/' }, /^url's host nowhere\.invalid does not resolve/],
    // The schema's refusals: the field and what it must be.
    [{ url: 7 }, 'url must be a string'],
    [{}, 'url is required'],
    [{ url: 'https://127.0.0.1/', events: 'token.created' }, 'events must be an array of strings'],
  ])('refuse %j with 422', async (body, details) => {
    const res = await admin(h.app, 'POST', '/webhooks', body)
    expect(res.status).toBe(422)
    expect(res.body.message).toBe('resources are invalid')
    expect(res.body.details).toMatch(details)
  })

  it('page deliveries by event id and refuse an unknown start', async () => {
    const hook = (await admin(h.app, 'POST', '/webhooks', { url: 'https://127.0.0.1:9/' })).body
    for (let i = 0; i < 3; i++) await admin(h.app, 'POST', `/webhooks/${hook.id}/ping`)
    const page = await admin(h.app, 'GET', `/webhooks/${hook.id}/deliveries?limit=2`)
    expect(page.body).toHaveLength(2)
    expect(page.body[0].attempts[0]).toMatchObject({ status: null, error: /ECONNREFUSED/ })
    const start = page.body[1].eventId
    expect(page.headers.link).toBe(
      `<https://127.0.0.1:8443/admin/v1/webhooks/${hook.id}/deliveries?limit=2&start=${start}>; rel="next"`,
    )
    const rest = await admin(h.app, 'GET', `/webhooks/${hook.id}/deliveries?limit=2&start=${start}`)
    expect(rest.body).toHaveLength(1)
    expect(rest.headers.link).toBeUndefined()
    for (const bad of ['nope', '0000000000000000000000000']) {
      const res = await admin(h.app, 'GET', `/webhooks/${hook.id}/deliveries?start=${bad}`)
      expect(res).toMatchObject({ status: 422, body: { message: 'start is invalid' } })
    }
  })

  it('answer 401 without a valid operator key', async () => {
    const id = (await admin(h.app, 'POST', '/webhooks', { url: 'https://127.0.0.1/' })).body.id
    const routes = [
      ['POST', '/webhooks'],
      ['GET', '/webhooks'],
      ['GET', `/webhooks/${id}`],
      ['GET', `/webhooks/${id}/secret`],
      ['DELETE', `/webhooks/${id}`],
      ['POST', `/webhooks/${id}/ping`],
      ['GET', `/webhooks/${id}/deliveries`],
    ] as const
    for (const [method, path] of routes) {
      for (const key of [null, 'op-nobody-0123456789abcdefghijklmnopqrstuvwxyz']) {
        const body = method === 'POST' ? { url: 'https://127.0.0.1/' } : undefined
        const res = await admin(h.app, method, path, body, key)
        expect(res.status).toBe(401)
        expect(res.body).toEqual({ message: 'Unauthorized' })
      }
    }
    expect((await admin(h.app, 'GET', '/webhooks')).body).toHaveLength(1)
  })
})

describe('webhook endpoints without WEBHOOK_ALLOW_PRIVATE', () => {
  let h: Harness
  beforeEach(async () => {
    h = await harness(adminEnv)
  })
  afterEach(() => h.close())

  it.each([
    ['https://127.0.0.1/hook', "url's host 127.0.0.1 is a loopback address"],
    ['https://127.1.2.3:8443/hook', "url's host 127.1.2.3 is a loopback address"],
    ['https://10.0.0.5/hook', "url's host 10.0.0.5 is a private address"],
    ['https://172.20.1.1/hook', "url's host 172.20.1.1 is a private address"],
    ['https://192.168.0.10/hook', "url's host 192.168.0.10 is a private address"],
    ['https://100.64.1.1/hook', "url's host 100.64.1.1 is a private address"],
    [
      'https://169.254.169.254/latest/meta-data',
      "url's host 169.254.169.254 is a link-local address",
    ],
    ['https://0.0.0.0/hook', "url's host 0.0.0.0 is an unspecified address"],
    ['https://[::1]/hook', "url's host ::1 is a loopback address"],
    ['https://[::ffff:127.0.0.1]/hook', "url's host ::ffff:7f00:1 is a loopback address"],
    ['https://[fd12:3456::1]/hook', "url's host fd12:3456::1 is a private address"],
    ['https://[fe80::1]/hook', "url's host fe80::1 is a link-local address"],
    ['https://0x7f000001/hook', "url's host 127.0.0.1 is a loopback address"],
    [
      'https://localhost/hook',
      /^url's host localhost resolves to a loopback address \((127\.0\.0\.1|::1)\)$/,
    ],
    ['http://93.184.215.14/hook', 'url must be an https:// URL'],
  ])('refuse %s', async (url, details) => {
    const res = await admin(h.app, 'POST', '/webhooks', { url })
    expect(res.status).toBe(422)
    expect(res.body.message).toBe('resources are invalid')
    expect(res.body.details).toMatch(details)
    expect((await admin(h.app, 'GET', '/webhooks')).body).toEqual([])
  })

  it('take a public address', async () => {
    const res = await admin(h.app, 'POST', '/webhooks', { url: 'https://93.184.215.14/hook' })
    expect(res.status).toBe(201)
  })
})
