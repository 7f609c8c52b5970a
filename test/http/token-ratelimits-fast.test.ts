import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all } from '../helpers.js'
import { type Answer, closeServing, serving } from './serving.js'

/**
 * A token's own `ratelimits` (Tessera) through the answers given ahead of Fastify
 * (src/http/ahead): the create fast path reads and refuses them as the route does, and
 * retrieve's fast path stops a token at its own limit as the route does. Each answer is held
 * against Fastify's own for the same request.
 */
afterEach(closeServing)

const tokens = (username: string, token: string) => `/tokens/v2/${username}?access_token=${token}`
const burst = { name: 'burst', limit: 2, duration: 1000 }

/** An answer without what differs from one create to the next. */
function shape(answer: Answer) {
  const body = JSON.parse(answer.body)
  const headers = answer.headers.filter(([name]) => name !== 'x-rate-limit-reset')
  if (answer.status !== 200) return { ...answer, headers, body }
  const { id, token, created, modified, ...rest } = body
  return { ...answer, headers, body: rest }
}

describe('ratelimits ahead of Fastify', () => {
  it('creates with ratelimits and refuses bad ones exactly as the route does', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    await s.h.ctx.tokens.validate(sk.token)
    const url = tokens(s.h.alice.username, sk.token)
    const expires = new Date(s.h.clock.now + 600_000).toISOString()
    const bodies: [string, number][] = [
      [JSON.stringify({ scopes: ['tokens:read'], ratelimits: [burst] }), 200],
      [JSON.stringify({ scopes: ['tokens:read'], ratelimits: [] }), 200],
      [JSON.stringify({ ratelimits: [burst, burst] }), 422],
      [JSON.stringify({ ratelimits: [{ ...burst, duration: 999 }] }), 422],
      [JSON.stringify({ ratelimits: [{ ...burst, extra: 1 }] }), 422],
      [JSON.stringify({ ratelimits: [{ ...burst, limit: '2' }] }), 422],
      [JSON.stringify({ ratelimits: null }), 422],
      [JSON.stringify({ scopes: ['tokens:read'], ratelimits: [burst], expires }), 422],
    ]
    for (const [body, status] of bodies) {
      const route = await s.inject(url, 'POST', {}, body)
      s.fastify.length = 0
      const fast = await s.socket(url, 'POST', {}, body)
      expect(s.fastify, body).toEqual([])
      expect(fast.status, body).toBe(status)
      expect(shape(fast), body).toEqual(shape(route))
    }
    const made = JSON.parse((await s.socket(url, 'POST', {}, bodies[0]?.[0])).body)
    expect(made.ratelimits).toEqual([burst])
    expect((await s.h.ctx.tokens.get(s.h.alice, made.id)).ratelimits).toEqual([burst])
    const plain = JSON.parse((await s.socket(url, 'POST', {}, bodies[1]?.[0])).body)
    expect(plain).not.toHaveProperty('ratelimits')
  })

  it("answers retrieve past a token's own limit as the route does", async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const account = s.h.alice
    const holder = s.h.ctx.accounts.holder(account)
    const input = { scopes: ['styles:read'], ratelimits: [burst] }
    const view = await s.h.ctx.tokens.create(account, holder, input, cliActor)
    const url = `/tokens/v2?access_token=${view.token}`
    await s.h.ctx.tokens.validate(view.token as string)
    s.fastify.length = 0
    const passed = [await s.socket(url), await s.socket(url)]
    expect(passed.map((a) => a.status)).toEqual([200, 200])
    const fast = await s.socket(url)
    expect(s.fastify).toEqual([])
    // Refused, it took nothing: Fastify's answer to the same request is the same refusal.
    const route = await s.inject(url)
    expect(fast.status).toBe(429)
    expect(shape(fast)).toEqual(shape(route))
    expect(Object.fromEntries(fast.headers)).toMatchObject({
      'ratelimit-policy': '"burst";q=2;w=1',
      ratelimit: '"burst";r=n;t=1',
      'retry-after': '1',
      'x-rate-limit-limit': '1000',
    })
  })
})
