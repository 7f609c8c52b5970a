import { afterEach, describe, expect, it, vi } from 'vitest'
import { overridesRepo } from '../../src/db/ratelimit-overrides.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv, secrets } from './admin-client.js'

/**
 * The namespace API (docs/ratelimits.md, Unkey's ratelimit API): limits on a platform's own
 * identifiers in fixed windows aligned to the epoch, and overrides that replace a request's
 * limit for an identifier or a pattern of them (one `*`).
 */
const verifierSecret = 'edge-one-0123456789abcdefghijklmnopqrstuvwxyz'
const env = { ADMIN_KEYS: `${adminEnv.ADMIN_KEYS},vf@verifier:${verifierSecret}` }
const minute = 60_000

let h: Harness
afterEach(async () => {
  const done = h as Harness | undefined
  h = undefined as unknown as Harness
  vi.restoreAllMocks()
  await done?.close()
})

const limit = (body: unknown, ns = 'signups', key = secrets.k1) =>
  admin(h.app, 'POST', `/ratelimits/${ns}`, body, key)
const overridePath = (identifier: string, ns = 'signups') =>
  `/ratelimits/${ns}/overrides/${encodeURIComponent(identifier)}`
const setOverride = (identifier: string, body: unknown, ns = 'signups') =>
  admin(h.app, 'PUT', overridePath(identifier, ns), body)
/** The answers of `n` requests of `identifier`, each as [status, body]. */
async function requests(n: number, body: Record<string, unknown>) {
  const answers: unknown[] = []
  for (let i = 0; i < n; i++) {
    const res = await limit(body)
    answers.push([res.status, res.body])
  }
  return answers
}
const answer = (success: boolean, limit: number, remaining: number, reset = T0 + minute) => [
  200,
  { success, limit, remaining, reset },
]

describe('a request of an identifier', () => {
  it('passes up to its limit in a window, then is refused until the window ends', async () => {
    h = await harness(env)
    const ask = { identifier: 'user_1', limit: 3, duration: minute }
    expect(await requests(4, ask)).toEqual([
      answer(true, 3, 2),
      answer(true, 3, 1),
      answer(true, 3, 0),
      answer(false, 3, 0),
    ])
    // Another identifier, and the same one in another namespace, count apart.
    expect(await requests(1, { ...ask, identifier: 'user_2' })).toEqual([answer(true, 3, 2)])
    const other = await limit(ask, 'logins')
    expect([other.status, other.body]).toEqual(answer(true, 3, 2))
    h.clock.now = T0 + minute - 1
    expect(await requests(1, ask)).toEqual([answer(false, 3, 0)])
    // At the window's end, a new window.
    h.clock.now = T0 + minute
    expect(await requests(1, ask)).toEqual([answer(true, 3, 2, T0 + 2 * minute)])
  })

  it('counts its cost; one refused counts nothing; a cost of 0 only looks', async () => {
    h = await harness(env)
    const ask = { identifier: 'tenant-9', limit: 5, duration: 10_000 }
    const reset = T0 + 10_000
    expect(await requests(2, { ...ask, cost: 2 })).toEqual([
      answer(true, 5, 3, reset),
      answer(true, 5, 1, reset),
    ])
    // 2 asked, 1 left: refused, and the 1 is still there.
    expect(await requests(1, { ...ask, cost: 2 })).toEqual([answer(false, 5, 1, reset)])
    expect(await requests(1, { ...ask, cost: 0 })).toEqual([answer(true, 5, 1, reset)])
    expect(await requests(1, ask)).toEqual([answer(true, 5, 0, reset)])
    expect(await requests(1, { ...ask, cost: 0 })).toEqual([answer(false, 5, 0, reset)])
  })

  it('refuses bad input with 422 and a sentence, counting nothing', async () => {
    h = await harness(env)
    const ok = { identifier: 'user_1', limit: 3, duration: minute }
    const bad: [string, unknown, string][] = [
      ['Signups', ok, 'namespace must match /^[a-z0-9][a-z0-9._-]{0,63}$/'],
      ['signups', [ok], 'the body must be an object of a rate limit request'],
      ['signups', { ...ok, name: 'x' }, 'name is not a field of a rate limit request'],
      ['signups', { ...ok, identifier: '' }, 'identifier must be a string of 1 to 256 characters'],
      [
        'signups',
        { ...ok, identifier: 'x'.repeat(257) },
        'identifier must be a string of 1 to 256 characters',
      ],
      ['signups', { ...ok, identifier: 7 }, 'identifier must be a string of 1 to 256 characters'],
      ['signups', { ...ok, identifier: 'a\nb' }, 'identifier may not hold control characters'],
      ['signups', { ...ok, identifier: 'a*b*' }, 'identifier may hold one * at most'],
      ['signups', { ...ok, limit: 0 }, 'limit must be a whole number from 1 to 1000000000'],
      ['signups', { ...ok, limit: 1.5 }, 'limit must be a whole number from 1 to 1000000000'],
      [
        'signups',
        { ...ok, duration: 999 },
        'duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      ['signups', { ...ok, cost: -1 }, 'cost must be a whole number from 0 to 1000000000'],
    ]
    for (const [ns, body, details] of bad) {
      const res = await limit(body, ns)
      expect([ns, body, res.status, res.body]).toEqual([
        ns,
        body,
        422,
        { message: 'resources are invalid', details },
      ])
    }
    expect(await requests(1, ok)).toEqual([answer(true, 3, 2)])
  })
})

describe('overrides', () => {
  it('replace the limit of the identifiers they match: exact first, then the longest pattern', async () => {
    h = await harness(env)
    const ask = (identifier: string) => ({ identifier, limit: 2, duration: minute })
    const limitOf = async (identifier: string) =>
      (await limit({ ...ask(identifier), cost: 0 })).body
    expect((await setOverride('*@acme.com', { limit: 10, duration: minute })).status).toBe(200)
    expect(await limitOf('bob@acme.com')).toEqual({
      success: true,
      limit: 10,
      remaining: 10,
      reset: T0 + minute,
    })
    expect((await limitOf('bob@acme.org')).limit).toBe(2)
    // An exact override beats every pattern; of patterns, the one with the most characters.
    await setOverride('bob@acme.com', { limit: 3, duration: minute })
    await setOverride('*.acme.com', { limit: 20, duration: 5000 })
    await setOverride('eve@*', { limit: 30, duration: minute })
    await setOverride('*', { limit: 1, duration: minute })
    expect((await limitOf('bob@acme.com')).limit).toBe(3)
    expect((await limitOf('ann@acme.com')).limit).toBe(10)
    expect(await limitOf('ann@mail.acme.com')).toEqual({
      success: true,
      limit: 20,
      remaining: 20,
      reset: T0 + 5000,
    })
    expect((await limitOf('eve@acme.com')).limit).toBe(10)
    expect((await limitOf('eve@example.org')).limit).toBe(30)
    expect((await limitOf('anyone')).limit).toBe(1)
    // A pattern matches what it starts and ends with, nothing between too.
    await admin(h.app, 'DELETE', overridePath('*'))
    await setOverride('user_*', { limit: 7, duration: minute })
    expect((await limitOf('user_')).limit).toBe(7)
    expect((await limitOf('user')).limit).toBe(2)

    // Counting follows the override: bob@acme.com passes 3 times, not 2.
    expect(await requests(4, ask('bob@acme.com'))).toEqual([
      answer(true, 3, 2),
      answer(true, 3, 1),
      answer(true, 3, 0),
      answer(false, 3, 0),
    ])
    // Deleted: the request's own limit is back (2, of which 3 are used), then the pattern's.
    expect((await admin(h.app, 'DELETE', overridePath('bob@acme.com'))).status).toBe(204)
    expect(await requests(1, { ...ask('bob@acme.com'), cost: 0 })).toEqual([answer(true, 10, 7)])
    await admin(h.app, 'DELETE', overridePath('*@acme.com'))
    expect(await requests(1, ask('bob@acme.com'))).toEqual([answer(false, 2, 0)])
    expect(await requests(1, ask('carol@acme.com'))).toEqual([answer(true, 2, 1)])
  })

  it('are read back, listed by pages, deleted once, and audited and sent as events', async () => {
    h = await harness(env)
    const set = await setOverride('*@acme.com', { limit: 10, duration: minute })
    const made = {
      namespace: 'signups',
      identifier: '*@acme.com',
      limit: 10,
      duration: minute,
      created: new Date(T0).toISOString(),
      modified: new Date(T0).toISOString(),
    }
    expect([set.status, set.body]).toEqual([200, made])
    h.clock.now = T0 + 1000
    const changed = await setOverride('*@acme.com', { limit: 12, duration: 2000 })
    const now = { ...made, limit: 12, duration: 2000, modified: new Date(T0 + 1000).toISOString() }
    expect([changed.status, changed.body]).toEqual([200, now])
    const read = await admin(h.app, 'GET', overridePath('*@acme.com'))
    expect([read.status, read.body]).toEqual([200, now])
    const absent = await admin(h.app, 'GET', overridePath('nobody'))
    expect([absent.status, absent.body]).toEqual([404, { message: 'Not found' }])
    expect((await admin(h.app, 'GET', overridePath('*@acme.com', 'logins'))).status).toBe(404)
    const slash = await setOverride('a/b c', { limit: 1, duration: 1000 })
    expect([slash.status, slash.body.identifier]).toEqual([200, 'a/b c'])
    await setOverride('user_1', { limit: 1, duration: 1000 })
    // The longest identifier, in the path (src/app.ts: maxParamLength).
    const longest = await setOverride('x'.repeat(256), { limit: 1, duration: 1000 })
    expect([longest.status, longest.body.identifier]).toEqual([200, 'x'.repeat(256)])

    const first = await admin(h.app, 'GET', '/ratelimits/signups/overrides?limit=2')
    expect(first.body.map((o: { identifier: string }) => o.identifier)).toEqual([
      '*@acme.com',
      'a/b c',
    ])
    const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1] as string
    expect(next).toMatch(/\/admin\/v1\/ratelimits\/signups\/overrides\?limit=2&start=a%2Fb\+c$/)
    const second = await admin(h.app, 'GET', next.slice(next.indexOf('/ratelimits')))
    expect(second.body.map((o: { identifier: string }) => o.identifier)).toEqual([
      'user_1',
      'x'.repeat(256),
    ])
    expect(second.headers.link).toBeUndefined()
    expect((await admin(h.app, 'GET', '/ratelimits/logins/overrides')).body).toEqual([])

    const deleted = await admin(h.app, 'DELETE', overridePath('*@acme.com'))
    expect([deleted.status, deleted.body]).toEqual([204, undefined])
    const again = await admin(h.app, 'DELETE', overridePath('*@acme.com'))
    expect([again.status, again.body]).toEqual([404, { message: 'Not found' }])
    expect((await admin(h.app, 'GET', overridePath('*@acme.com'))).status).toBe(404)

    const actions = 'ratelimit_override.set,ratelimit_override.deleted'
    const audit = await admin(h.app, 'GET', `/audit?action=${actions}`)
    const target = { type: 'ratelimit', id: 'signups/*@acme.com' }
    const actor = { type: 'admin', id: 'k1' }
    const ofAcme = audit.body.filter((e: { target: { id: string } }) => e.target.id === target.id)
    expect(ofAcme).toMatchObject([
      {
        action: 'ratelimit_override.deleted',
        actor,
        target,
        details: { namespace: 'signups', identifier: '*@acme.com', limit: 12, duration: 2000 },
      },
      {
        action: 'ratelimit_override.set',
        target,
        details: {
          namespace: 'signups',
          identifier: '*@acme.com',
          limit: 12,
          duration: 2000,
          before: { limit: 10, duration: minute },
        },
      },
      { action: 'ratelimit_override.set', target, details: { limit: 10, duration: minute } },
    ])
    expect(ofAcme[2].details.before).toBeUndefined()
    expect(ofAcme.every((e: { account?: string }) => e.account === undefined)).toBe(true)
    // Each is in the integrations' outbox too (the event stream, webhooks).
    const outbox = await h.ctx.db
      .selectFrom('event_outbox')
      .select('action')
      .where('action', 'like', 'ratelimit_override.%')
      .execute()
    expect(outbox.map((o) => o.action).sort()).toEqual([
      'ratelimit_override.deleted',
      ...Array(5).fill('ratelimit_override.set'),
    ])
  })

  it('refuses bad overrides with 422 and a sentence, changing nothing', async () => {
    h = await harness(env)
    const ok = { limit: 5, duration: minute }
    const bad: [string, string, unknown, string][] = [
      ['Signups', 'user_1', ok, 'namespace must match /^[a-z0-9][a-z0-9._-]{0,63}$/'],
      ['signups', '*a*', ok, 'identifier may hold one * at most'],
      ['signups', 'x'.repeat(257), ok, 'identifier must be a string of 1 to 256 characters'],
      ['signups', 'a\u0007', ok, 'identifier may not hold control characters'],
      ['signups', 'user_1', { ...ok, cost: 1 }, 'cost is not a field of an override'],
      [
        'signups',
        'user_1',
        { limit: 5 },
        'duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      ['signups', 'user_1', 'x', 'the body must be an object of an override'],
    ]
    for (const [ns, identifier, body, details] of bad) {
      const res = await setOverride(identifier, body, ns)
      expect([identifier, res.status, res.body]).toEqual([
        identifier,
        422,
        { message: 'resources are invalid', details },
      ])
    }
    const start = await admin(h.app, 'GET', '/ratelimits/signups/overrides?start=a**')
    expect([start.status, start.body]).toEqual([422, { message: 'start is invalid' }])
    expect((await admin(h.app, 'GET', '/ratelimits/signups/overrides')).body).toEqual([])
    const audit = await admin(h.app, 'GET', '/audit?action=ratelimit_override.set')
    expect(audit.body).toEqual([])
  })

  it('are the admin scope’s: a verifier key counts requests but changes and reads no override', async () => {
    h = await harness(env)
    await setOverride('user_1', { limit: 9, duration: minute })
    const ask = { identifier: 'user_1', limit: 3, duration: minute }
    const counted = await limit(ask, 'signups', verifierSecret)
    expect([counted.status, counted.body]).toEqual(answer(true, 9, 8))
    const refusal = "the operator key's scope does not allow this"
    for (const [method, path, body] of [
      ['PUT', overridePath('user_1'), { limit: 1, duration: 1000 }],
      ['GET', overridePath('user_1'), undefined],
      ['DELETE', overridePath('user_1'), undefined],
      ['GET', '/ratelimits/signups/overrides', undefined],
    ] as const) {
      const res = await admin(h.app, method, path, body, verifierSecret)
      expect([method, path, res.status, res.body.message]).toEqual([method, path, 403, refusal])
    }
    expect((await admin(h.app, 'GET', overridePath('user_1'))).body.limit).toBe(9)
  })
})

describe('the overrides cache of an instance', () => {
  const iso = new Date(T0).toISOString()
  /** An override written by another instance: this one is not told. */
  const elsewhere = (identifier: string, limit: number) =>
    overridesRepo.put(h.ctx.db, {
      namespace: 'signups',
      identifier,
      limit,
      duration: minute,
      created: iso,
      modified: iso,
    })
  const limitOf = async (identifier: string) =>
    (await limit({ identifier, limit: 2, duration: minute, cost: 0 })).body.limit

  it('reads a namespace once, then answers from memory; a change elsewhere holds within a second', async () => {
    h = await harness(env)
    const reads = vi.spyOn(overridesRepo, 'all')
    // Cold: requests at once share one read.
    const first = await Promise.all(
      Array.from({ length: 5 }, () => limit({ identifier: 'u', limit: 2, duration: minute })),
    )
    expect(first.map((r) => r.body.success)).toEqual([true, true, false, false, false])
    expect(reads).toHaveBeenCalledTimes(1)
    await elsewhere('user_1', 10)
    h.clock.now = T0 + 499
    expect(await limitOf('user_1')).toBe(2)
    expect(reads).toHaveBeenCalledTimes(1)
    // Half a second old: still answered from memory, and read again behind it.
    h.clock.now = T0 + 500
    expect(await limitOf('user_1')).toBe(2)
    expect(reads).toHaveBeenCalledTimes(2)
    await vi.waitFor(async () => expect(await limitOf('user_1')).toBe(10))
    expect(reads).toHaveBeenCalledTimes(2)
    // A second after its read began, a cache is never used: the request waits for a new read.
    await elsewhere('user_1', 20)
    h.clock.now = T0 + 1500
    expect(await limitOf('user_1')).toBe(20)
    expect(reads).toHaveBeenCalledTimes(3)
    // A change made here is in force here at once.
    await setOverride('user_1', { limit: 30, duration: minute })
    expect(await limitOf('user_1')).toBe(30)
  })
})
