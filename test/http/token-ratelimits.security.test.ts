import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'

/**
 * What an attacker would try with a token's own `ratelimits`: lists that are not limits, a kind
 * of token that may not set them, another account's tokens, and a limit that would loosen its
 * account's. Each refusal changes nothing.
 */
let h: Harness
let writer: string
beforeEach(async () => {
  h = await harness({ RATE_LIMIT_PER_MINUTE: '5' })
  const input = { scopes: [...all, 'styles:read'] }
  writer = (await h.ctx.tokens.create(h.alice, h.ctx.accounts.holder(h.alice), input, cliActor))
    .token as string
})
afterEach(() => h.close())

const limit = (name: string, more: Record<string, unknown> = {}) => ({
  name,
  limit: 10,
  duration: 60_000,
  ...more,
})
const invalid = (details: string) => ({ message: 'resources are invalid', details })

/** Every token of alice's, as stored (the listing's documents). */
const stored = async () =>
  JSON.parse((await h.ctx.tokens.list(h.alice, { limit: 100, sortby: 'created' })).body)

const notAList = invalid('ratelimits must be an array of objects')

const refusals: [unknown, unknown][] = [
  [
    Array.from({ length: 51 }, (_, i) => limit(`l${i}`)),
    invalid('ratelimits may hold at most 50 limits'),
  ],
  [[limit('burst'), limit('burst')], invalid('ratelimits[1].name burst is given twice')],
  [
    [limit('burst', { duration: 999 })],
    invalid('ratelimits[0].duration must be a whole number of milliseconds from 1000 to 86400000'),
  ],
  [
    [limit('burst', { duration: 86_400_001 })],
    invalid('ratelimits[0].duration must be a whole number of milliseconds from 1000 to 86400000'),
  ],
  [
    [limit('burst', { limit: 0 })],
    invalid('ratelimits[0].limit must be a whole number from 1 to 1000000000'),
  ],
  [
    [limit('burst', { cost: -1 })],
    invalid('ratelimits[0].cost must be a whole number from 0 to 1000000000'),
  ],
  [[limit('burst', { window: 's' })], invalid('ratelimits[0] has an unknown field window')],
  [
    [JSON.parse('{"name":"burst","limit":1,"duration":1000,"__proto__":{"limit":9}}')],
    invalid('ratelimits[0] has an unknown field __proto__'),
  ],
  // Names go into headers (RateLimit-Policy) and metrics labels: nothing to quote.
  [[limit('a"b;q=999')], invalid('ratelimits[0].name must match /^[a-z0-9][a-z0-9._-]{0,63}$/')],
  [[limit('Burst')], invalid('ratelimits[0].name must match /^[a-z0-9][a-z0-9._-]{0,63}$/')],
  [[limit('x'.repeat(65))], invalid('ratelimits[0].name must match /^[a-z0-9][a-z0-9._-]{0,63}$/')],
  // Not the shape at all: the schema's refusal, as for an expiresAt that is not a string.
  [[limit('burst', { limit: '10' })], invalid('ratelimits[0].limit must be an integer')],
  [[limit('burst', { limit: 1.5 })], invalid('ratelimits[0].limit must be an integer')],
  [[{ limit: 10, duration: 60_000 }], invalid('ratelimits[0].name is required')],
  [{ name: 'burst', limit: 10, duration: 60_000 }, notAList],
  [['burst'], invalid('ratelimits[0] must be an object')],
  ['burst', notAList],
]

/** An update may also give null (no limits of its own), and says so. */
const onUpdate = (answer: unknown) =>
  answer === notAList ? invalid('ratelimits must be an array of objects or null') : answer

describe('a token given limits that are not limits', () => {
  it('is refused on create with the reason, and nothing is made', async () => {
    const before = await stored()
    for (const [ratelimits, answer] of refusals) {
      const res = await call(h.app, 'POST', '/tokens/v2/alice', writer, {
        scopes: ['styles:read'],
        ratelimits,
      })
      expect([res.status, res.body], JSON.stringify(ratelimits)).toEqual([422, answer])
      // One request at a time: each minute's `requests` of alice's starts again.
      h.clock.now += 60_000
    }
    expect(await stored()).toEqual(before)
  })

  it('is refused on update with the reason, and the token is as it was', async () => {
    const holder = h.ctx.accounts.holder(h.alice)
    const input = { scopes: ['styles:read'], ratelimits: [limit('burst')] }
    const target = await h.ctx.tokens.create(h.alice, holder, input, cliActor)
    const before = await stored()
    for (const [ratelimits, answer] of refusals) {
      const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, writer, {
        note: 'changed',
        ratelimits,
      })
      expect([res.status, res.body], JSON.stringify(ratelimits)).toEqual([422, onUpdate(answer)])
      h.clock.now += 60_000
    }
    expect(await stored()).toEqual(before)
  })
})

describe('who may give a token limits', () => {
  it('no pk, no temporary token; not a token of another account', async () => {
    const holder = h.ctx.accounts.holder(h.alice)
    const pk = await h.ctx.tokens.create(h.alice, holder, { scopes: ['styles:read'] }, cliActor)
    const bob = await h.ctx.tokens.create(
      h.bob,
      h.ctx.accounts.holder(h.bob),
      { scopes: ['styles:read'] },
      cliActor,
    )
    const ratelimits = [limit('burst')]
    const before = { alice: await stored(), bob: await h.ctx.tokens.get(h.bob, bob.id) }
    const next = () => {
      h.clock.now += 60_000
    }

    // A pk creates nothing and changes nothing (it holds no tokens:write).
    const byPk = await call(h.app, 'POST', '/tokens/v2/alice', pk.token, { ratelimits })
    expect([byPk.status, byPk.body.message]).toEqual([404, 'Not found'])
    next()
    const patchByPk = await call(h.app, 'PATCH', `/tokens/v2/alice/${pk.id}`, pk.token, {
      ratelimits,
    })
    expect([patchByPk.status, patchByPk.body.message]).toEqual([404, 'Not found'])
    next()

    // A temporary token has no record to keep them: refused, whoever asks.
    const expires = new Date(T0 + 600_000).toISOString()
    const temporary = await call(h.app, 'POST', '/tokens/v2/alice', writer, {
      expires,
      scopes: ['tokens:read'],
      ratelimits,
    })
    expect([temporary.status, temporary.body]).toEqual([
      422,
      invalid('temporary tokens cannot have ratelimits'),
    ])
    next()
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', writer, { expires, scopes: all })
    expect(tk.status).toBe(200)
    next()
    const byTk = await call(h.app, 'POST', '/tokens/v2/alice', tk.body.token, {
      expires,
      scopes: ['tokens:read'],
      ratelimits,
    })
    expect([byTk.status, byTk.body]).toEqual([
      422,
      invalid('temporary tokens cannot have ratelimits'),
    ])
    next()

    // alice's writer and bob's token: 404 as for any other change of another's token.
    const elsewhere = await call(h.app, 'PATCH', `/tokens/v2/bob/${bob.id}`, writer, {
      ratelimits,
    })
    expect([elsewhere.status, elsewhere.body.message]).toEqual([404, 'Not found'])
    next()
    const mixed = await call(h.app, 'PATCH', `/tokens/v2/alice/${bob.id}`, writer, { ratelimits })
    expect([mixed.status, mixed.body.message]).toEqual([404, 'Not found'])

    expect(await stored()).toEqual(before.alice)
    expect(await h.ctx.tokens.get(h.bob, bob.id)).toEqual(before.bob)
  })

  it("cannot loosen its account's limits: a token's own `requests` is one more limit", async () => {
    const holder = h.ctx.accounts.holder(h.alice)
    const loose = [{ name: 'requests', limit: 1_000_000, duration: 60_000 }]
    const pk = await h.ctx.tokens.create(
      h.alice,
      holder,
      { scopes: ['styles:read'], ratelimits: loose },
      cliActor,
    )
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) {
      statuses.push((await call(h.app, 'GET', '/tokens/v2', pk.token)).status)
    }
    // Alice's `requests` is 5 a minute, whatever the token says.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
    const last = await call(h.app, 'GET', '/tokens/v2', pk.token)
    expect(last.headers['x-rate-limit-limit']).toBe('5')
    expect(last.headers['ratelimit-policy']).toBe('"requests";q=5;w=60')
  })
})
