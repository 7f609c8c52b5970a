import { afterEach, describe, expect, it } from 'vitest'
import { all } from '../helpers.js'
import { closeServing, serving } from './serving.js'

/**
 * The fast paths (src/http/ahead/) read the token from the query alone: a request with an
 * Authorization header goes on to Fastify, whose guard compares the two, and answers exactly as
 * Fastify answers it. A request without one is taken ahead as before.
 */
afterEach(closeServing)

describe('the fast paths and the Authorization header', () => {
  it('retrieve: the header goes to Fastify; the query alone stays ahead', async () => {
    const s = await serving({})
    const pk = s.h.alice.defaultToken.token as string
    const sk = (await s.h.token(s.h.alice.username, all)).token
    const url = `/tokens/v2?access_token=${pk}`
    await s.inject(url)
    for (const headers of [
      { authorization: `Bearer ${pk}` },
      { authorization: `Bearer ${sk}` },
      { authorization: 'Basic YWxpY2U6c2VjcmV0' },
    ]) {
      const route = await s.inject(url, 'GET', headers)
      s.fastify.length = 0
      const socket = await s.socket(url, 'GET', headers)
      expect(s.fastify).toEqual([`GET ${url}`])
      expect(socket).toEqual(route)
    }
    s.fastify.length = 0
    const fast = await s.socket(url)
    expect(s.fastify).toEqual([])
    expect([fast.status, JSON.parse(fast.body).code]).toEqual([200, 'TokenValid'])
    // Two different tokens: 422 with why, over the socket as through Fastify.
    const two = await s.socket(url, 'GET', { authorization: `Bearer ${sk}` })
    expect([two.status, JSON.parse(two.body)]).toEqual([
      422,
      {
        message: 'access token is required',
        details:
          'the access_token query parameter and the Authorization header name different tokens: give one',
      },
    ])
  })

  it('create: the header goes to Fastify; a bad body says why on both ways alike', async () => {
    const s = await serving({})
    const { username } = s.h.alice
    const sk = (await s.h.token(username, all)).token
    const url = `/tokens/v2/${username}?access_token=${sk}`
    // Validated once, so the fast path takes the token.
    await s.inject(`/tokens/v2?access_token=${sk}`)
    const bad = JSON.stringify({ scopes: 'styles:read' })
    const refused = {
      message: 'resources are invalid',
      details: 'scopes must be an array of strings',
    }
    s.fastify.length = 0
    const fast = await s.socket(url, 'POST', {}, bad)
    expect(s.fastify).toEqual([])
    const route = await s.inject(url, 'POST', {}, bad)
    expect([fast.status, JSON.parse(fast.body)]).toEqual([422, refused])
    expect(fast).toEqual(route)
    s.fastify.length = 0

    const made = JSON.stringify({ note: 'n', scopes: ['tokens:read'] })
    const header = await s.socket(url, 'POST', { authorization: `Bearer ${sk}` }, made)
    expect(s.fastify).toEqual([`POST ${url}`])
    expect([header.status, JSON.parse(header.body).note]).toEqual([200, 'n'])
    s.fastify.length = 0
    const alone = await s.socket(`/tokens/v2/${username}`, 'POST', bearer(sk), made)
    expect(s.fastify).toEqual([`POST /tokens/v2/${username}`])
    expect(alone.status).toBe(200)
  })
})

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
