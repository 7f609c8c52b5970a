import pino from 'pino'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { randomAlnum } from '../../src/ids.js'
import type { NamedLimit } from '../../src/ratelimit/named.js'
import { RedisRateLimiter } from '../../src/ratelimit/redis.js'
import { call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Introspection's rate limits (docs/ratelimits.md): an active answer lists every limit on the
 * token, a use consumes one of each before credits are spent, a refusal names the limit that
 * refused and consumes none; a verifier's introspection (`count: false`) reads them only, and
 * takes its passes from `POST /admin/v1/ratelimit-leases`, off the same count.
 */

let h: Harness
beforeEach(async () => {
  h = await harness(adminEnv)
})
afterEach(() => h.close())

const minute = T0 + 60_000
const second = T0 + 1_000

/** 3 a second and 5 a minute of its own, on top of alice's `requests` (100,000 a minute). */
const own: NamedLimit[] = [
  { name: 'burst', limit: 3, duration: 1_000 },
  { name: 'minute', limit: 5, duration: 60_000 },
]

async function limited(limits: NamedLimit[] = own) {
  const account = await h.ctx.accounts.find('alice')
  if (account === undefined) throw new Error('no alice')
  const view = await h.ctx.tokens.create(
    account,
    h.ctx.accounts.holder(account),
    { scopes: ['styles:read'], ratelimits: limits },
    cliActor,
  )
  return view as typeof view & { token: string }
}

const introspect = async (body: Record<string, unknown>) =>
  (await admin(h.app, 'POST', '/introspect', body)).body
const lease = (body: Record<string, unknown>) => admin(h.app, 'POST', '/ratelimit-leases', body)
const retrieve = async (token: string) =>
  (await call(h.app, 'GET', `/tokens/v2?access_token=${encodeURIComponent(token)}`)).status

/** The three limits as a use leaves them: `requests`, `burst`, `minute` remaining. */
const states = (requests: number, burst: number, perMinute: number) => [
  { name: 'requests', limit: 100_000, remaining: requests, reset: minute },
  { name: 'burst', limit: 3, remaining: burst, reset: second },
  { name: 'minute', limit: 5, remaining: perMinute, reset: minute },
]

const rateLimited = (ratelimit: string, ratelimits: unknown) => ({
  active: false,
  code: 'TokenValid',
  reason: 'rate_limited',
  ratelimit,
  ratelimits,
})

const range = { from: T0 - 3_600_000, to: T0 + 3_600_000 }

describe('introspection of a token with limits', () => {
  it("lists every limit of an active answer, its account's first, with what this use left", async () => {
    const pk = await limited()
    const res = await admin(h.app, 'POST', '/introspect', { token: pk.token })
    expect(res.status).toBe(200)
    expect(res.body).toStrictEqual({
      active: true,
      scope: 'styles:read',
      username: 'alice',
      token_type: 'Bearer',
      iat: Math.floor(T0 / 1000),
      client_id: 'api',
      id: pk.id,
      usage: 'pk',
      code: 'TokenValid',
      ratelimits: states(99_999, 2, 4),
    })
    expect(Object.keys(res.body)).toEqual([
      'active',
      'code',
      'scope',
      'username',
      'token_type',
      'iat',
      'client_id',
      'id',
      'usage',
      'ratelimits',
    ])
    // A token without limits of its own, on an account without any: nothing new is said.
    const plain = await introspect({ token: h.alice.defaultToken.token })
    expect(plain.active).toBe(true)
    expect(plain.ratelimits).toBeUndefined()
  })

  it('refuses with rate_limited and the limit that refused, consuming none, until the window ends', async () => {
    const pk = await limited()
    for (let i = 0; i < 3; i++) expect((await introspect({ token: pk.token })).active).toBe(true)
    // The 4th in the second: `burst` refuses; `requests` and `minute` get back what it took.
    expect(await introspect({ token: pk.token })).toStrictEqual(
      rateLimited('burst', states(99_997, 0, 2)),
    )
    expect(await introspect({ token: pk.token })).toStrictEqual(
      rateLimited('burst', states(99_997, 0, 2)),
    )
    // Retrieve shares the count: refused too (and counted rate_limited).
    expect(await retrieve(pk.token)).toBe(429)
    h.clock.now = second
    const next = { ...states(99_996, 2, 1)[1], reset: second + 1_000 }
    expect((await introspect({ token: pk.token })).ratelimits).toEqual([
      states(99_996, 2, 1)[0],
      next,
      states(99_996, 2, 1)[2],
    ])
    h.clock.now = second + 1_000
    expect((await introspect({ token: pk.token })).active).toBe(true)
    // `minute` is now spent: 5 passed in the minute, whatever the seconds.
    h.clock.now = second + 2_000
    const refused = await introspect({ token: pk.token })
    expect(refused).toMatchObject({ active: false, reason: 'rate_limited', ratelimit: 'minute' })
    expect(refused.ratelimits[2]).toEqual({ name: 'minute', limit: 5, remaining: 0, reset: minute })

    await h.ctx.usage.flush()
    const tokens = await h.ctx.usage.byToken('alice', range)
    expect(tokens).toMatchObject([{ token: pk.id, outcomes: { valid: 5, rate_limited: 4 } }])
  })

  it('gives the limits back when credits are short: the next request still has its count', async () => {
    const pk = await limited([{ name: 'minute', limit: 2, duration: 60_000 }])
    await h.ctx.credits.set({ account: 'alice', tokenId: pk.id }, { remaining: 1 })
    const first = await introspect({ token: pk.token })
    expect(first.credits).toEqual({ token: 0 })
    expect(first.ratelimits[1]).toEqual({ name: 'minute', limit: 2, remaining: 1, reset: minute })
    // Short of credits: refused, and what the limits took goes back.
    expect(await introspect({ token: pk.token })).toStrictEqual({
      active: false,
      code: 'TokenValid',
      reason: 'credits_exhausted',
    })
    const free = await introspect({ token: pk.token, cost: 0 })
    expect(free.active).toBe(true)
    expect(free.ratelimits[1]).toEqual({ name: 'minute', limit: 2, remaining: 0, reset: minute })
    // Limited first: no credit is read for a refused request.
    expect(await introspect({ token: pk.token, cost: 0 })).toMatchObject({
      reason: 'rate_limited',
      ratelimit: 'minute',
    })
    await h.ctx.usage.flush()
    expect(await h.ctx.usage.byToken('alice', range)).toMatchObject([
      { token: pk.id, outcomes: { valid: 2, credits_exhausted: 1, rate_limited: 1 } },
    ])
  })

  it("answers a service's `requests` refusal with that name, for a token without limits", async () => {
    await h.close()
    h = await harness({ ...adminEnv, RATE_LIMIT_PER_MINUTE: '2' })
    const { token } = h.alice.defaultToken
    expect((await introspect({ token })).ratelimits).toBeUndefined()
    expect((await introspect({ token })).active).toBe(true)
    expect(await introspect({ token })).toStrictEqual(
      rateLimited('requests', [{ name: 'requests', limit: 2, remaining: 0, reset: minute }]),
    )
  })
})

describe("a verifier's introspection (count: false)", () => {
  it('reads the limits without consuming or refusing: the verifier leases its passes', async () => {
    const pk = await limited()
    for (let i = 0; i < 5; i++) {
      const answer = await introspect({ token: pk.token, cost: 0, count: false })
      expect(answer.ratelimits).toEqual(states(100_000, 3, 5))
    }
    // Retrieve and a counted introspection consume; the verifier's read shows it.
    expect(await retrieve(pk.token)).toBe(200)
    expect((await introspect({ token: pk.token })).active).toBe(true)
    expect((await introspect({ token: pk.token })).active).toBe(true)
    const read = await introspect({ token: pk.token, cost: 0, count: false })
    expect(read.active).toBe(true)
    expect(read.ratelimits).toEqual(states(99_997, 0, 2))
    await h.ctx.usage.flush()
    expect(await h.ctx.usage.byToken('alice', range)).toMatchObject([
      { token: pk.id, outcomes: { valid: 3 } },
    ])
  })
})

describe('POST /admin/v1/ratelimit-leases', () => {
  it('grants a block of every limit off the shared count, never more than the least left', async () => {
    const pk = await limited()
    const res = await lease({ token: pk.token, want: 10 })
    expect(res.status).toBe(200)
    expect(res.body).toStrictEqual({
      granted: 3,
      ratelimits: [
        { ...states(99_997, 0, 2)[0], duration: 60_000, cost: 1, granted: 3, ttlMs: 60_000 },
        { ...states(99_997, 0, 2)[1], duration: 1_000, cost: 1, granted: 3, ttlMs: 1_000 },
        { ...states(99_997, 0, 2)[2], duration: 60_000, cost: 1, granted: 3, ttlMs: 60_000 },
      ],
    })
    // One count: Tessera's own verifications find the block taken.
    expect(await retrieve(pk.token)).toBe(429)
    expect(await introspect({ token: pk.token })).toMatchObject({ ratelimit: 'burst' })
    // Nothing left of `burst`: nothing granted of any limit, and `ratelimit` names it.
    const none = await lease({ token: pk.token, want: 1 })
    expect(none.body).toStrictEqual({
      granted: 0,
      ratelimit: 'burst',
      ratelimits: [
        { ...states(99_997, 0, 2)[0], duration: 60_000, cost: 1, granted: 0, ttlMs: 60_000 },
        { ...states(99_997, 0, 2)[1], duration: 1_000, cost: 1, granted: 0, ttlMs: 1_000 },
        { ...states(99_997, 0, 2)[2], duration: 60_000, cost: 1, granted: 0, ttlMs: 60_000 },
      ],
    })
    h.clock.now = second + 500
    const later = await lease({ token: pk.token, want: 10 })
    expect(later.body.granted).toBe(2)
    expect(later.body.ratelimits.map((l: { granted: number }) => l.granted)).toEqual([2, 2, 2])
    expect(later.body.ratelimits[1]).toMatchObject({
      remaining: 1,
      reset: second + 1_000,
      ttlMs: 500,
    })
    expect(later.body.ratelimits[2]).toMatchObject({ remaining: 0, ttlMs: 58_500 })
  })

  it.runIf(process.env.TEST_REDIS_URL)(
    "takes the block from Redis's count, asking less when another instance took some",
    async () => {
      const url = process.env.TEST_REDIS_URL as string
      const prefix = `tessera-test-${randomAlnum(8)}:`
      await h.close()
      h = await harness({ ...adminEnv, REDIS_URL: url, REDIS_KEY_PREFIX: prefix })
      await shared(h.ctx.rateLimiter as RedisRateLimiter)
      const pk = await limited([{ name: 'minute', limit: 5, duration: 60_000 }])
      // Another instance passes 3 of the minute's 5: this one does not know it yet.
      const other = new RedisRateLimiter(url, prefix, pino({ enabled: false }))
      try {
        await shared(other)
        const rule = { name: 'minute', limit: 5, duration: 60_000 }
        for (let i = 0; i < 3; i++) {
          expect((await other.hit(`token:${pk.id}:minute`, T0, rule)).allowed).toBe(true)
        }
        const res = await lease({ token: pk.token, want: 10 })
        expect(res.body.granted).toBe(2)
        expect(res.body.ratelimits[1]).toMatchObject({ name: 'minute', granted: 2, remaining: 0 })
        expect(await retrieve(pk.token)).toBe(429)
        expect((await other.hit(`token:${pk.id}:minute`, T0, rule)).allowed).toBe(false)
      } finally {
        await other.close()
      }
    },
  )

  it('grants nothing to a token that is not valid, and refuses a bad body', async () => {
    const pk = await limited()
    await h.ctx.tokens.remove(await accountOf('alice'), pk.id, cliActor)
    expect((await lease({ token: pk.token, want: 1 })).body).toStrictEqual({
      granted: 0,
      code: 'TokenRevoked',
      ratelimits: [],
    })
    expect((await lease({ token: 'nope', want: 1 })).body).toStrictEqual({
      granted: 0,
      code: 'TokenMalformed',
      ratelimits: [],
    })
    for (const body of [{ token: pk.token, want: 0 }, { token: pk.token }, { want: 1 }]) {
      const refused = await lease(body)
      expect(refused.status).toBe(422)
      expect(refused.body.message).toBe('resources are invalid')
    }
  })
})

async function accountOf(username: string) {
  const account = await h.ctx.accounts.find(username)
  if (account === undefined) throw new Error(`no ${username}`)
  return account
}

/** Resolves once a Redis limiter counts in Redis (before, it counts in process). */
const shared = (limiter: RedisRateLimiter) =>
  vi.waitFor(() => expect(limiter.shared).toBe(true), { timeout: 5_000 })
