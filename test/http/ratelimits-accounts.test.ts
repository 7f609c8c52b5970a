import { afterEach, describe, expect, it } from 'vitest'
import { call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv, secrets } from './admin-client.js'

/**
 * An account's own named rate limits (docs/ratelimits.md), through the admin API: read and set
 * as a whole, refused with a sentence that names the field, audited and sent as an event, and
 * in force from the next request.
 */
let h: Harness
afterEach(() => h.close())

const verifierSecret = 'edge-one-0123456789abcdefghijklmnopqrstuvwxyz'
const env = { ADMIN_KEYS: `${adminEnv.ADMIN_KEYS},vf@verifier:${verifierSecret}` }

/** The service's `requests` as the harness sets it (RATE_LIMIT_PER_MINUTE 100000). */
const service = { name: 'requests', limit: 100_000, duration: 60_000 }
const requests = { name: 'requests', limit: 3, duration: 60_000 }
const daily = { name: 'daily', limit: 1000, duration: 86_400_000, cost: 2 }

const get = (username = 'alice') => admin(h.app, 'GET', `/accounts/${username}/ratelimits`)
const put = (body: unknown, username = 'alice', key: string | null = secrets.k1) =>
  admin(h.app, 'PUT', `/accounts/${username}/ratelimits`, body, key)
const invalid = (details: string) => ({ message: 'resources are invalid', details })
const limitsOf = (res: { headers: Record<string, unknown> }) => ({
  interval: res.headers['x-rate-limit-interval'],
  limit: res.headers['x-rate-limit-limit'],
  reset: res.headers['x-rate-limit-reset'],
  policy: res.headers['ratelimit-policy'],
  remaining: res.headers.ratelimit,
  retry: res.headers['retry-after'],
})

describe('an account’s own rate limits', () => {
  it('are read back as own, plan and effective, audited and sent as ratelimits.changed', async () => {
    h = await harness(env)
    const none = { own: [], plan: [], effective: [service] }
    expect([(await get()).status, (await get()).body]).toEqual([200, none])
    const set = await put({ limits: [requests, daily] })
    const view = { own: [requests, daily], plan: [], effective: [requests, daily] }
    expect([set.status, set.body]).toEqual([200, view])
    expect((await get()).body).toEqual(view)
    expect((await get('bob')).body).toEqual(none)

    const audit = await admin(h.app, 'GET', '/accounts/alice/audit?action=ratelimits.changed')
    expect(audit.body).toMatchObject([
      {
        action: 'ratelimits.changed',
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'account', id: 'alice' },
        details: { limits: [requests, daily], before: [] },
      },
    ])
    const sent = await h.ctx.db
      .selectFrom('event_outbox')
      .select(['event_id', 'action', 'username'])
      .where('action', '=', 'ratelimits.changed')
      .execute()
    expect(sent).toEqual([
      { event_id: audit.body[0].id, action: 'ratelimits.changed', username: 'alice' },
    ])

    // An empty list: none of its own; the service's `requests` holds again.
    const cleared = await put({ limits: [] })
    expect([cleared.status, cleared.body]).toEqual([200, none])
    const after = await admin(h.app, 'GET', '/accounts/alice/audit?action=ratelimits.changed')
    expect(after.body[0].details).toEqual({ limits: [], before: [requests, daily] })
    expect((await h.ctx.accounts.get('alice')).ratelimits).toBeUndefined()
  })

  it('refuses what is not a list of limits with a sentence, changing nothing', async () => {
    h = await harness(env)
    await put({ limits: [daily] })
    const one = (limit: Record<string, unknown>) => ({ limits: [limit] })
    const name = 'limits[0].name must match /^[a-z0-9][a-z0-9._-]{0,63}$/'
    const many = Array.from({ length: 51 }, (_, i) => ({ ...requests, name: `l${i}` }))
    const bad: [unknown, string][] = [
      [one({ ...requests, name: 'two words' }), name],
      [one({ ...requests, name: 'say "hi"' }), name],
      [one({ ...requests, name: 'Requests' }), name],
      [one({ ...requests, name: '' }), name],
      [one({ ...requests, name: 'x'.repeat(65) }), name],
      [{ limits: many }, 'limits may hold at most 50 limits'],
      [
        one({ ...requests, duration: 999 }),
        'limits[0].duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      [
        one({ ...requests, duration: 86_400_001 }),
        'limits[0].duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      [
        one({ ...requests, duration: '60000' }),
        'limits[0].duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      [
        one({ ...requests, limit: 0 }),
        'limits[0].limit must be a whole number from 1 to 1000000000',
      ],
      [
        one({ ...requests, limit: 1.5 }),
        'limits[0].limit must be a whole number from 1 to 1000000000',
      ],
      [
        one({ ...requests, cost: -1 }),
        'limits[0].cost must be a whole number from 0 to 1000000000',
      ],
      [one({ ...requests, window: 60 }), 'limits[0] has an unknown field window'],
      [{ limits: [requests, requests] }, 'limits[1].name requests is given twice'],
      [{ limits: ['requests'] }, 'limits[0] must be an object'],
      [{ limits: { requests } }, 'limits must be a list'],
      [{}, 'limits must be a list'],
      [[requests], 'the body must be {"limits": [...]}'],
      [{ limits: [requests], plan: 'pro' }, 'the body must be {"limits": [...]}'],
      ['limits', 'the body must be {"limits": [...]}'],
    ]
    for (const [body, details] of bad) {
      const res = await put(body)
      expect([body, res.status, res.body]).toEqual([body, 422, invalid(details)])
    }
    const empty = await admin(h.app, 'PUT', '/accounts/alice/ratelimits')
    expect([empty.status, empty.body]).toEqual([422, invalid('the body must be {"limits": [...]}')])
    // Nothing changed: the limits as set, one change audited.
    expect((await get()).body.own).toEqual([daily])
    const audit = await admin(h.app, 'GET', '/accounts/alice/audit?action=ratelimits.changed')
    expect(audit.body).toHaveLength(1)
    // Fifty are allowed.
    const fifty = await put({ limits: many.slice(0, 50) })
    expect([fifty.status, fifty.body.own.length]).toEqual([200, 50])
  })

  it('answers 404 No such user for an unknown account, and 403 to a verifier key', async () => {
    h = await harness(env)
    for (const res of [await get('nobody'), await put({ limits: [] }, 'nobody')]) {
      expect([res.status, res.body]).toEqual([
        404,
        { message: 'No such user', details: 'no such account: nobody' },
      ])
    }
    const refusal = (method: string) => ({
      message: "the operator key's scope does not allow this",
      details: `key vf has the verifier scope; ${method} /admin/v1/accounts/:username/ratelimits needs the admin scope`,
    })
    const read = await admin(h.app, 'GET', '/accounts/alice/ratelimits', undefined, verifierSecret)
    expect([read.status, read.body]).toEqual([403, refusal('GET')])
    const write = await put({ limits: [requests] }, 'alice', verifierSecret)
    expect([write.status, write.body]).toEqual([403, refusal('PUT')])
    const none = await put({ limits: [requests] }, 'alice', null)
    expect(none.status).toBe(401)
    // Nothing changed.
    expect((await get()).body.own).toEqual([])
  })
})

describe('an account’s limits on its requests', () => {
  it('hold from the very next request, with Mapbox’s and the IETF headers naming them', async () => {
    h = await harness(env)
    const token = h.alice.defaultToken.token as string
    const retrieve = () => call(h.app, 'GET', '/tokens/v2', token)
    const reset = String((T0 + 60_000) / 1000)
    const before = await retrieve()
    expect(limitsOf(before)).toEqual({
      interval: '60',
      limit: '100000',
      reset,
      policy: '"requests";q=100000;w=60',
      remaining: '"requests";r=99999;t=60',
      retry: undefined,
    })
    // 3 a minute for alice: the request before counts in the same window of `requests`.
    await put({ limits: [requests] })
    const atThree = { interval: '60', limit: '3', reset, policy: '"requests";q=3;w=60' }
    const second = await retrieve()
    expect([second.status, limitsOf(second)]).toEqual([
      200,
      { ...atThree, remaining: '"requests";r=1;t=60', retry: undefined },
    ])
    h.clock.now += 1500
    const third = await retrieve()
    expect([third.status, limitsOf(third)]).toEqual([
      200,
      { ...atThree, remaining: '"requests";r=0;t=59', retry: undefined },
    ])
    const fourth = await retrieve()
    expect([fourth.status, fourth.body]).toEqual([429, { message: 'Too Many Requests' }])
    expect(limitsOf(fourth)).toEqual({ ...atThree, remaining: '"requests";r=0;t=59', retry: '59' })
    // Bob's account is not bound by alice's limits.
    const bobs = await call(h.app, 'GET', '/tokens/v2', h.bob.defaultToken.token as string)
    expect([bobs.status, bobs.headers['x-rate-limit-limit']]).toEqual([200, '100000'])

    // A limit of another name counts on its own; the IETF headers name the nearest to refusing.
    await put({ limits: [{ name: 'burst', limit: 2, duration: 1000 }] })
    const burst = await retrieve()
    expect([burst.status, limitsOf(burst)]).toEqual([
      200,
      {
        interval: '60',
        limit: '100000',
        reset,
        policy: '"burst";q=2;w=1',
        remaining: '"burst";r=1;t=1',
        retry: undefined,
      },
    ])
    await retrieve()
    const refused = await retrieve()
    expect([refused.status, limitsOf(refused)]).toEqual([
      429,
      {
        interval: '60',
        limit: '100000',
        reset,
        policy: '"burst";q=2;w=1',
        remaining: '"burst";r=0;t=1',
        retry: '1',
      },
    ])
    // Cleared: only the service's `requests`.
    await put({ limits: [] })
    const cleared = await retrieve()
    expect([cleared.status, limitsOf(cleared).policy]).toEqual([200, '"requests";q=100000;w=60'])
  })
})
