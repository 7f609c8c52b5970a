import { afterEach, describe, expect, it } from 'vitest'
import { tokensRepo } from '../../src/db/repositories.js'
import { all } from '../helpers.js'
import { type Answer, closeServing, serving } from './serving.js'

/**
 * What the old string of a rolled token (issue 43, item 2) can still do through the token API,
 * over real sockets (the create answered ahead of Fastify, the rest by Fastify) and held against
 * Fastify's own answer where the fast path takes the request. A token is rolled because its
 * string may be in the wrong hands: nothing that string makes or changes may outlive its grace.
 */
afterEach(closeServing)

const hour = 3_600_000
const iso = (ms: number) => new Date(ms).toISOString()
const json = (answer: Answer) => [answer.status, JSON.parse(answer.body || 'null')]

/** An answer without the rate limit's window, which may turn between two requests. */
const shape = (answer: Answer) => ({
  ...answer,
  headers: answer.headers.filter(([name]) => name !== 'x-rate-limit-reset'),
})

/** A served app, an account's deploy token W rolled with an hour's grace, and its successor. */
async function rolled() {
  const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
  const name = s.h.alice.username
  const w = await s.h.token(name, [...all, 'styles:read'], { note: 'deploy' })
  const graceEnd = s.h.clock.now + hour
  const roll = await s.socket(
    `/tokens/v2/${name}/${w.id}/roll?access_token=${w.token}`,
    'POST',
    {},
    JSON.stringify({ expires: iso(graceEnd) }),
  )
  expect(roll.status).toBe(200)
  const w2 = JSON.parse(roll.body) as { id: string; token: string }
  // Validated once since the roll: the fast path knows the old string, retiring, as it is now.
  expect((await s.h.ctx.tokens.validate(w.token)).code).toBe('TokenValid')
  const url = (path = '') => `/tokens/v2/${name}${path}?access_token=${w.token}`
  const notFound = (details: string) => [
    404,
    {
      message: 'Not found',
      details: `the authorizing token was rolled and works until ${iso(graceEnd)}: ${details}`,
    },
  ]
  return { s, name, w, w2, graceEnd, url, notFound }
}

describe("a rolled token's old string", () => {
  it('cannot create a permanent token, ahead of Fastify or on the route (404), so none outlives its grace or kills its successor', async () => {
    const { s, name, w, w2, graceEnd, url, notFound } = await rolled()
    const refused = notFound(
      'a rolled token cannot create a permanent token; use the token that replaced it',
    )
    for (const scopes of [['tokens:write', 'tokens:read', 'styles:read'], ['styles:read'], []]) {
      const body = JSON.stringify({ note: 'mine', scopes })
      s.fastify.length = 0
      const fast = await s.socket(url(), 'POST', {}, body)
      // Answered ahead of Fastify, exactly as the route answers it.
      expect(s.fastify).toEqual([])
      expect(json(fast)).toEqual(refused)
      expect(shape(fast)).toEqual(shape(await s.inject(url(), 'POST', {}, body)))
    }
    // Refused before its body is looked at, as a temporary token's create of one is.
    const bad = await s.socket(url(), 'POST', {}, JSON.stringify({ scopes: 'all' }))
    expect(json(bad)).toEqual(refused)
    // Nothing was made; the successor works; once the grace ends, the old string has nothing.
    const created = (await s.h.ctx.audit.list({ username: name, limit: 50 })).filter(
      (e) => e.action === 'token.created' && e.actor.type === 'token',
    )
    expect(created).toEqual([])
    const successor = `/tokens/v2/${name}/${w2.id}?access_token=${w2.token}`
    expect((await s.socket(successor, 'PATCH', {}, '{"note":"deploy"}')).status).toBe(200)
    s.h.clock.now = graceEnd
    expect(JSON.parse((await s.socket(`/tokens/v2?access_token=${w.token}`)).body).code).toBe(
      'TokenRevoked',
    )
    const listed = JSON.parse((await s.socket(`/tokens/v2/${name}?access_token=${w2.token}`)).body)
    // W itself stays listed until the sweep removes it (within 30 s of its end).
    const ids = listed.map((t: { id: string }) => t.id).filter((id: string) => id !== w.id)
    expect(ids.sort()).toEqual([s.h.alice.defaultToken.id, w2.id].sort())
  })

  it("cannot take another token's string by updating or rolling it, nor delete it (404); it may still change itself", async () => {
    const { s, name, w, url, notFound } = await rolled()
    // Another sk of the account, whose string the old one must not obtain: an update answers
    // with the token's string (sk too), a roll with its successor's.
    const other = await s.h.token(name, ['tokens:read', 'styles:read'], { note: 'ci' })
    const refused = notFound('it may change no token but itself; use the token that replaced it')
    const attempts = [
      s.socket(url(`/${other.id}`), 'PATCH', {}, JSON.stringify({ note: 'ci' })),
      s.socket(url(`/${other.id}`), 'PATCH', {}, JSON.stringify({ allowedUrls: null })),
      s.socket(
        url(`/${other.id}/roll`),
        'POST',
        {},
        JSON.stringify({ expires: iso(s.h.clock.now + hour) }),
      ),
      s.socket(url(`/${other.id}/roll`), 'POST'),
      s.socket(url(`/${other.id}`), 'DELETE'),
    ]
    for (const answer of await Promise.all(attempts)) {
      expect(json(answer)).toEqual(refused)
      expect(answer.body).not.toContain(other.token)
    }
    // The other token is as it was, and works.
    expect(await s.h.ctx.tokens.get(s.h.alice, other.id)).toMatchObject({ note: 'ci' })
    expect(JSON.parse((await s.socket(`/tokens/v2?access_token=${other.token}`)).body).code).toBe(
      'TokenValid',
    )
    const changed = (await s.h.ctx.audit.list({ username: name, limit: 50 })).filter((e) =>
      ['token.updated', 'token.deleted', 'token.rolled'].includes(e.action),
    )
    const touching = changed.filter(
      (e) => e.target.id === other.id || (e.details as { previous?: string }).previous === other.id,
    )
    expect(touching).toEqual([])
    // Itself: a note, and ending its grace early.
    const own = await s.socket(url(`/${w.id}`), 'PATCH', {}, JSON.stringify({ note: 'old deploy' }))
    expect(own.status).toBe(200)
    expect((await s.socket(url(`/${w.id}`), 'DELETE')).status).toBe(204)
  })

  it('is refused by the stored record when it reaches an instance whose cache has not yet heard of the roll: no permanent token, and a temporary one only within the grace and without tokens:write', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const name = s.h.alice.username
    const w = await s.h.token(name, [...all, 'styles:read'], { note: 'deploy' })
    const cached = async () => {
      const validation = await s.h.ctx.tokens.validate(w.token)
      expect(validation.code).toBe('TokenValid')
      return (validation as { principal: { retiresAt?: number } }).principal.retiresAt
    }
    expect(await cached()).toBeUndefined()
    // Rolled elsewhere (another instance or worker) with 10 minutes' grace: its row is written,
    // and the notice that would empty this instance's cache has not come yet.
    const graceEnd = s.h.clock.now + 10 * 60_000
    expect(await tokensRepo.retire(s.h.ctx.db, w.id, iso(graceEnd))).toBe(true)
    expect(await cached()).toBeUndefined()
    const url = `/tokens/v2/${name}?access_token=${w.token}`
    const since = `the authorizing token was rolled and works until ${iso(graceEnd)}`
    for (const scopes of [['tokens:write', 'tokens:read'], ['styles:read']]) {
      const body = JSON.stringify({ note: 'mine', scopes })
      s.fastify.length = 0
      const fast = await s.socket(url, 'POST', {}, body)
      // Answered ahead of Fastify, which the stale cache lets it take, exactly as the route.
      expect(s.fastify).toEqual([])
      expect(json(fast)).toEqual([
        404,
        {
          message: 'Not found',
          details: `${since}: a rolled token cannot create a permanent token; use the token that replaced it`,
        },
      ])
      expect(shape(fast)).toEqual(shape(await s.inject(url, 'POST', {}, body)))
    }
    const temporary = (expires: number, scopes: string[]) =>
      s.socket(url, 'POST', {}, JSON.stringify({ expires: iso(expires), scopes }))
    expect(json(await temporary(graceEnd - 60_000, ['tokens:write']))).toEqual([
      422,
      {
        message: 'scopes are invalid',
        details: 'a rolled token cannot give tokens:write to a temporary token',
      },
    ])
    expect(json(await temporary(graceEnd + 60_000, ['styles:read']))).toEqual([
      422,
      { message: 'expires may not be greater than the expiration of the authorizing token' },
    ])
    const within = await temporary(graceEnd, ['styles:read'])
    expect(within.status).toBe(200)
    expect(JSON.parse(within.body).expires).toBe(iso(graceEnd))
    const created = (await s.h.ctx.audit.list({ username: name, limit: 50 })).filter(
      (e) => e.action === 'token.created' && e.actor.type === 'token',
    )
    expect(created).toEqual([])
  })

  it('is no credential of the admin API or the dashboard', async () => {
    const { s, name, w } = await rolled()
    const bearer = { authorization: `Bearer ${w.token}` }
    expect((await s.socket(`/admin/v1/accounts/${name}`, 'GET', bearer)).status).toBe(401)
    expect((await s.socket(`/admin/v1/accounts/${name}?access_token=${w.token}`)).status).toBe(401)
    // The dashboard knows people by their session cookie only: signed out, off to sign in.
    const page = await s.socket(`/account/tokens/new?access_token=${w.token}`, 'GET', bearer)
    const location = page.headers.find(([n]) => n === 'location')?.[1]
    expect([page.status, location?.split('?')[0]]).toEqual([303, '/account/sign-in'])
  })
})
