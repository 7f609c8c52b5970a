import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all } from '../helpers.js'
import { secrets } from './admin-client.js'
import { expiredTemporaries } from './name-reuse.js'
import { closeServing, serving } from './serving.js'
import { usageRows } from './usage-helpers.js'

/**
 * The strings of a deleted account, refused by a verifier once another account has its name
 * (issue 43, item 4): the verifier reports their refusals, and Tessera counts them against nobody,
 * never against the later account, whatever the report names (a verifier does not decide whom a
 * count is charged to; one of before this rule names the account in the string). Over real
 * sockets, with a verifier's scoped key, as `@tessera/verifier` sends them.
 */
afterEach(closeServing)

const minute = 60_000
const hour = 60 * minute
const verifierSecret = 'edge-one-0123456789abcdefghijklmnopqrstuvwxyz'

async function reused() {
  const s = await serving({
    ADMIN_KEYS: `k1:${secrets.k1},vf@verifier:${verifierSecret}`,
    RATE_LIMIT_PER_MINUTE: '1000',
  })
  const name = s.h.alice.username
  const key = (secret: string) => ({ authorization: `Bearer ${secret}` })
  const post = async (path: string, body: object) => {
    const res = await s.socket(
      `/admin/v1${path}`,
      'POST',
      key(verifierSecret),
      JSON.stringify(body),
    )
    return { status: res.status, body: JSON.parse(res.body) }
  }
  /** The account's totals and tokens over the whole day, read through the admin API. */
  const usage = async () => {
    await s.h.ctx.usage.flush()
    const day = 'from=2026-11-22&to=2026-11-23&resolution=minute'
    const path = `/admin/v1/accounts/${name}/usage`
    const series = await s.socket(`${path}?${day}`, 'GET', key(secrets.k1))
    const tokens = await s.socket(`${path}/tokens?${day}`, 'GET', key(secrets.k1))
    const byToken = JSON.parse(tokens.body).tokens as { token: string }[]
    byToken.sort((a, b) => (a.token < b.token ? -1 : 1))
    return { totals: JSON.parse(series.body).totals, tokens: byToken }
  }
  return { s, name, post, usage }
}

describe('a name used again, counted by a verifier', () => {
  it("counts a verifier's revoked refusals of a deleted account's pk against nobody, not the later account", async () => {
    const { s, name, post, usage } = await reused()
    // The former account's pk, in a public page; bob's sk, live.
    const pk = await s.h.token(name, ['styles:read'], { note: 'website' })
    const bobs = await s.h.token(s.h.bob.username, all)
    await s.h.ctx.accounts.remove(name, cliActor)
    // Someone takes the name once it has rested; the old pk keeps coming to an API behind a
    // verifier, which refuses it and reports the refusals under the name the string carries.
    s.h.clock.now += 2 * hour
    const later = await s.h.ctx.accounts.create(name, undefined, [], cliActor)
    // Its own token, deleted: that one's refusals are its own.
    const own = await s.h.token(name, ['styles:read'], { note: 'own' })
    await s.h.ctx.tokens.remove(later, own.id, cliActor)
    const at = new Date(s.h.clock.now).toISOString()
    const row = (token: string, outcomes: object) => ({
      minute: at,
      account: name,
      token,
      outcomes,
    })
    const reported = await post('/usage/reports', {
      reporter: 'edge-1',
      batch: 'b-1',
      counts: [
        row(pk.id, { revoked: 20, expired: 3 }),
        row(own.id, { revoked: 2 }),
        // Ids that were never the account's: bob's, and one that never was anyone's.
        row(bobs.id, { revoked: 5 }),
        row(`c${'0'.repeat(24)}`, { expired: 7 }),
      ],
    })
    expect(reported).toEqual({ status: 200, body: { counted: true } })
    expect(await usage()).toEqual({
      totals: { revoked: 2 },
      tokens: [{ token: own.id, outcomes: { revoked: 2 } }],
    })
    // The others are counted, against nobody, as Tessera's own unowned refusals are.
    const minutes = await usageRows(s.h.ctx.db, 'usage_minutes')
    expect(minutes[`/ ${at.slice(0, 16)}`]).toEqual({ revoked: 25, expired: 10 })
    expect(Object.keys(minutes).filter((k) => k.startsWith(`${s.h.bob.username}/`))).toEqual([])
  })

  it("tells a verifier that an expired temporary token of a deleted account is nobody's", async () => {
    const { s, name, post } = await reused()
    // A temporary token of its own, past its end too: that one's refusals are its own.
    const { former: tk, formerMaker: sk, own } = await expiredTemporaries(s, name)
    // A report row of a tk names no token and no issue time: the introspection answer says it.
    const ask = (token: string) => post('/introspect', { token, cost: 0, count: false })
    expect(await ask(tk)).toEqual({
      status: 200,
      body: { active: false, code: 'TokenExpired', unowned: true },
    })
    expect(await ask(sk.token)).toEqual({
      status: 200,
      body: { active: false, code: 'TokenRevoked', unowned: true },
    })
    expect(await ask(own)).toEqual({ status: 200, body: { active: false, code: 'TokenExpired' } })
  })
})
