import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all } from '../helpers.js'
import { type Answer, caughtUp, closeServing, serving } from './serving.js'

/**
 * `expiresAt` (Tessera) through the answers given ahead of Fastify (src/http/ahead): the create
 * fast path reads it as the route does, and retrieve's fast path says TokenExpired as the
 * route does. Each answer is held against Fastify's own for the same request.
 */
afterEach(closeServing)

const tokens = (username: string, token: string) => `/tokens/v2/${username}?access_token=${token}`
const iso = (ms: number) => new Date(ms).toISOString()

/** An answer without what differs from one create to the next. */
function shape(answer: Answer) {
  const body = JSON.parse(answer.body)
  const headers = answer.headers.filter(([name]) => name !== 'x-rate-limit-reset')
  if (answer.status !== 200) return { ...answer, headers, body }
  const { id, token, created, modified, ...rest } = body
  return { ...answer, headers, body: rest }
}

describe('expiresAt ahead of Fastify', () => {
  it('creates with expiresAt and refuses it beside expires exactly as the route does', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    await s.h.ctx.tokens.validate(sk.token)
    const url = tokens(s.h.alice.username, sk.token)
    const end = iso(s.h.clock.now + 86_400_000)
    const bodies: [string, number][] = [
      [JSON.stringify({ scopes: ['tokens:read'], expiresAt: end }), 200],
      [JSON.stringify({ scopes: ['tokens:read'], expiresAt: end, expires: end }), 422],
      [JSON.stringify({ expiresAt: iso(s.h.clock.now - 1) }), 422],
      [JSON.stringify({ expiresAt: 5 }), 422],
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
    expect(made.expiresAt).toBe(end)
    const stored = await s.h.ctx.tokens.get(s.h.alice, made.id)
    expect(stored.expiresAt).toBe(end)
  })

  it("refuses what the account's token policy forbids exactly as the route does", async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, [...all, 'styles:read'])
    await s.h.ctx.tokens.validate(sk.token)
    const policy = { maxSkLifetimeDays: 30, pkAllowedUrls: true }
    await s.h.ctx.accounts.setTokenPolicy(s.h.alice.username, policy, cliActor)
    // The policy's change comes back on the feed and empties alice's directory entry: once it
    // is in, the route's read caches her again and the fast path takes the request.
    await caughtUp(s.h)
    const url = tokens(s.h.alice.username, sk.token)
    const bodies: [string, number][] = [
      [JSON.stringify({ scopes: ['tokens:read'] }), 422],
      [
        JSON.stringify({
          scopes: ['tokens:read'],
          expiresAt: iso(s.h.clock.now + 31 * 86_400_000),
        }),
        422,
      ],
      [JSON.stringify({ scopes: ['styles:read'] }), 422],
      [
        JSON.stringify({ scopes: ['tokens:read'], expiresAt: iso(s.h.clock.now + 86_400_000) }),
        200,
      ],
    ]
    for (const [body, status] of bodies) {
      const route = await s.inject(url, 'POST', {}, body)
      s.fastify.length = 0
      const fast = await s.socket(url, 'POST', {}, body)
      expect(s.fastify, body).toEqual([])
      expect(fast.status, body).toBe(status)
      expect(shape(fast), body).toEqual(shape(route))
    }
    expect(JSON.parse((await s.socket(url, 'POST', {}, bodies[0]?.[0])).body)).toEqual({
      message: 'resources are invalid',
      details:
        "the account's token policy requires a secret token to end within 30 days: give expiresAt",
    })
  })

  it('answers retrieve of an expired token as the route does', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const account = s.h.alice
    const end = s.h.clock.now + 60_000
    const input = { scopes: ['tokens:read'], expiresAt: iso(end) }
    const holder = s.h.ctx.accounts.holder(account)
    const view = await s.h.ctx.tokens.create(account, holder, input, cliActor)
    const url = `/tokens/v2?access_token=${view.token}`
    await s.h.ctx.tokens.validate(view.token as string)
    s.h.clock.now = end
    const route = await s.inject(url)
    s.fastify.length = 0
    const fast = await s.socket(url)
    expect(s.fastify).toEqual([])
    expect(shape(fast)).toEqual(shape(route))
    expect(JSON.parse(fast.body)).toEqual({
      code: 'TokenExpired',
      token: { usage: 'sk', user: account.username, authorization: view.id },
    })
  })
})
