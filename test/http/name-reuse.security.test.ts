import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { adminEnv, secrets } from './admin-client.js'
import { expiredTemporaries } from './name-reuse.js'
import { closeServing, serving } from './serving.js'

/**
 * The strings of a deleted account, verified once another account has its name (issue 43, item
 * 4): their refusals are counted against nobody, never against the later account, which must not
 * see the former one's counts (docs/metering.md, "A name used again"). Over real sockets: the
 * retrieves (answered ahead of Fastify when they can be) and the admin API's usage reads.
 */
afterEach(closeServing)

const minute = 60_000
const hour = 60 * minute

async function reused() {
  const s = await serving({ ...adminEnv, RATE_LIMIT_PER_MINUTE: '1000' })
  const name = s.h.alice.username
  const admin = { authorization: `Bearer ${secrets.k1}` }
  const retrieve = async (token: string) =>
    JSON.parse((await s.socket(`/tokens/v2?access_token=${token}`)).body).code
  /** The account's totals and tokens over the whole day, read through the admin API. */
  const usage = async () => {
    await s.h.ctx.usage.flush()
    const day = 'from=2026-11-22&to=2026-11-23&resolution=minute'
    const series = await s.socket(`/admin/v1/accounts/${name}/usage?${day}`, 'GET', admin)
    const tokens = await s.socket(`/admin/v1/accounts/${name}/usage/tokens?${day}`, 'GET', admin)
    if (series.status !== 200) return series.status
    const byToken = JSON.parse(tokens.body).tokens as { token: string }[]
    byToken.sort((a, b) => (a.token < b.token ? -1 : 1))
    return { totals: JSON.parse(series.body).totals, tokens: byToken }
  }
  return { s, name, retrieve, usage }
}

describe('a name used again', () => {
  it("counts a deleted account's revoked pk against nobody, not the later account of its name", async () => {
    const { s, name, retrieve, usage } = await reused()
    // The former account: its pk in a public page, used once.
    const pk = await s.h.token(name, ['styles:read'], { note: 'website' })
    expect(await retrieve(pk.token)).toBe('TokenValid')
    s.h.clock.now += minute
    expect(await usage()).toEqual({
      totals: { valid: 1 },
      tokens: [{ token: pk.id, outcomes: { valid: 1 } }],
    })
    await s.h.ctx.accounts.remove(name, cliActor)
    expect(await retrieve(pk.token)).toBe('TokenRevoked')
    expect(await usage()).toBe(404)
    // Someone takes the name once it has rested (an hour); the old pk keeps coming.
    s.h.clock.now += 2 * hour
    const later = await s.h.ctx.accounts.create(name, undefined, [], cliActor)
    // Its own token, deleted: that one's refusals are its own.
    const own = await s.h.token(name, ['styles:read'], { note: 'own' })
    await s.h.ctx.tokens.remove(later, own.id, cliActor)
    for (let i = 0; i < 20; i++) expect(await retrieve(pk.token)).toBe('TokenRevoked')
    for (let i = 0; i < 2; i++) expect(await retrieve(own.token)).toBe('TokenRevoked')
    s.h.clock.now += minute
    expect(await usage()).toEqual({
      totals: { revoked: 2 },
      tokens: [{ token: own.id, outcomes: { revoked: 2 } }],
    })
  })

  it("counts a deleted account's expired temporary token against nobody, not the later account", async () => {
    const { s, name, retrieve, usage } = await reused()
    // A temporary token of its own, past its end too: that one's refusals are its own.
    const { former: tk, own, ownMaker: writer } = await expiredTemporaries(s, name)
    for (let i = 0; i < 20; i++) expect(await retrieve(tk)).toBe('TokenExpired')
    expect(await retrieve(own)).toBe('TokenExpired')
    s.h.clock.now += minute
    // The later account's: its writer's create (valid), its own tk's refusal (expired).
    expect(await usage()).toEqual({
      totals: { valid: 1, expired: 1 },
      tokens: [
        { token: '', outcomes: { expired: 1 } },
        { token: writer.id, outcomes: { valid: 1 } },
      ],
    })
  })
})
