import { afterEach, describe, expect, it, vi } from 'vitest'
import { postgresChanges, sqliteChanges } from '../../src/db/changes.js'
import { randomAlnum } from '../../src/ids.js'
import { all, type Harness, T0, tampered } from '../helpers.js'
import { closeServing, serving } from './serving.js'
import { usageRows } from './usage-helpers.js'

/**
 * Requests answered ahead of Fastify (src/http/ahead/) are metered as the routes meter them,
 * and a request a fast path hands over to Fastify is metered once, by whoever answers it.
 */

afterEach(closeServing)

const tokens = (username: string, token: string) =>
  `/tokens/v2/${username}?access_token=${encodeURIComponent(token)}`

/** Every change made so far has reached this instance's cache (PostgreSQL's feed is late). */
async function caughtUp(h: Harness) {
  const { db, config, log } = h.ctx
  const changes =
    config.db.kind === 'postgres' ? postgresChanges(config.db, log) : sqliteChanges(db, log)
  const seen = vi.spyOn(h.ctx.tokens.directory, 'invalidate')
  const probe = `probe-${randomAlnum(8)}`
  await changes.notify(db, `account:${probe}`)
  await vi.waitFor(() => expect(seen).toHaveBeenCalledWith(probe), { timeout: 5_000 })
  seen.mockRestore()
}

describe('metering ahead of Fastify', () => {
  it('meters retrieves and creates once a request, answered ahead or handed over', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    const reader = await s.h.token(s.h.alice.username, ['tokens:read'])
    const gone = await s.h.token(s.h.alice.username, ['styles:read'])
    await s.h.ctx.tokens.remove(s.h.alice, gone.id, { type: 'cli' })
    await caughtUp(s.h) // no late change of these tokens takes the sk out of the cache
    await s.h.ctx.tokens.validate(sk.token) // cached: the fast paths take it
    const alice = s.h.alice.username
    const retrieve = (token: string) =>
      s.socket(`/tokens/v2?access_token=${encodeURIComponent(token)}`)
    s.fastify.length = 0
    expect((await retrieve(sk.token)).status).toBe(200)
    expect((await retrieve('garbage')).status).toBe(200)
    expect((await retrieve(tampered(sk.token))).status).toBe(200)
    expect(s.fastify).toEqual([]) // all three answered ahead
    // Not cached: its lookup is handed to the route.
    expect(JSON.parse((await retrieve(gone.token)).body).code).toBe('TokenRevoked')
    expect(s.fastify).toHaveLength(1)
    s.fastify.length = 0
    const create = await s.socket(tokens(alice, sk.token), 'POST', {}, '{"note":"ahead"}')
    expect(create.status).toBe(200)
    expect(s.fastify).toEqual([])
    // The reader may not create: handed to the guard with its validation, metered there.
    const refused = await s.socket(tokens(alice, reader.token), 'POST', {}, '{"note":"x"}')
    expect(refused.status).toBe(404)
    expect(s.fastify).toHaveLength(1)
    await s.h.ctx.usage.flush()
    const minute = new Date(s.h.clock.now).toISOString().slice(0, 16)
    expect(await usageRows(s.h.ctx.db, 'usage_minutes')).toEqual({
      [`/ ${minute}`]: { malformed: 1, invalid: 1 },
      [`${alice}/${sk.id} ${minute}`]: { valid: 2 },
      [`${alice}/${reader.id} ${minute}`]: { scope_missing: 1 },
      [`${alice}/${gone.id} ${minute}`]: { revoked: 1 },
    })
    expect(s.h.clock.now).toBe(T0)
  })
})
