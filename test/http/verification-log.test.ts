import { afterEach, describe, expect, it } from 'vitest'
import type { StoredVerification } from '../../src/db/verifications.js'
import { verificationsRepo } from '../../src/db/verifications.js'
import { all, type Harness, harness, T0, tampered } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { closeServing, serving } from './serving.js'

/**
 * The verification log (docs/verifications.md): exactly one row per verification, from every
 * source, with its fields; the buffer's bound drops rows, never requests, and counts them.
 */

afterEach(closeServing)
let own: Harness | undefined
afterEach(async () => {
  await own?.close()
  own = undefined
})

/** Every row of the log (flushed first), oldest first, without the fields no test can know. */
async function rows(h: Harness) {
  await h.ctx.verifications.log.flush()
  const { rows } = await h.ctx.db
    .selectFrom('verifications')
    .selectAll()
    .orderBy('at')
    .orderBy('id')
    .execute()
    .then((r) => ({ rows: r }))
  return rows.map((r) => {
    expect(Number(r.duration_us)).toBeGreaterThanOrEqual(0)
    expect(Number(r.duration_us)).toBeLessThan(5_000_000)
    return {
      at: Number(r.at),
      account: r.account,
      token: r.token_id,
      source: r.source,
      outcome: r.outcome,
      limit: r.limit_name,
      ip: r.ip,
      origin: r.origin,
      requestId: r.request_id,
    }
  })
}

const row = (fields: Partial<Awaited<ReturnType<typeof rows>>[number]>) => ({
  at: T0,
  account: '',
  token: '',
  limit: null,
  ip: '127.0.0.1',
  origin: null,
  requestId: null,
  ...fields,
})

describe('one row per verification, from every source', () => {
  it('retrieve, ahead of Fastify and through it: its outcome, account, client and origin', async () => {
    const s = await serving({ ...adminEnv, VERIFICATION_LOG: 'all' })
    const { h } = s
    const pk = h.alice.defaultToken
    const alice = h.alice.username
    const sk = await h.token(alice, all)
    await h.ctx.tokens.validate(sk.token)
    const retrieve = (token: string, headers: Record<string, string>) =>
      s.socket(`/tokens/v2?access_token=${encodeURIComponent(token)}`, 'GET', headers)
    s.fastify.length = 0
    const origin = { origin: 'https://maps.example.com', 'x-request-id': 'req-1' }
    expect((await retrieve(sk.token, origin)).status).toBe(200)
    const referer = { referer: 'https://u:p@Shop.Example.com:8443/a?b#c', 'x-request-id': 'req-2' }
    expect((await retrieve(tampered(sk.token), referer)).status).toBe(200)
    expect(s.fastify).toEqual([])
    // Through Fastify (inject): its own request id, and no socket address but the injected one.
    const injected = await s.inject(`/tokens/v2?access_token=${pk.token}`, 'GET', {
      'x-request-id': 'req-3',
    })
    expect(injected.status).toBe(200)
    expect(await rows(h)).toEqual([
      row({
        account: alice,
        token: sk.id,
        source: 'retrieve',
        outcome: 'valid',
        origin: 'maps.example.com',
        requestId: 'req-1',
      }),
      row({
        source: 'retrieve',
        outcome: 'invalid',
        origin: 'shop.example.com:8443',
        requestId: 'req-2',
      }),
      row({
        account: alice,
        token: pk.id,
        source: 'retrieve',
        outcome: 'valid',
        requestId: 'req-3',
      }),
    ])
  })

  it('the token API: valid, scope_missing, another account, rate_limited by its name', async () => {
    own = await harness({ RATE_LIMIT_PER_MINUTE: '3', VERIFICATION_LOG: 'all' })
    const h = own
    const alice = h.alice.username
    const sk = await h.token(alice, all)
    const reader = await h.token(alice, ['scopes:list'])
    const get = (path: string, token: string) =>
      h.app.inject({
        method: 'GET',
        url: `${path}?access_token=${token}`,
        headers: { 'x-request-id': 'r' },
      })
    expect((await get(`/tokens/v2/${alice}`, sk.token)).statusCode).toBe(200)
    expect((await get(`/tokens/v2/${alice}`, reader.token)).statusCode).toBe(404)
    expect((await get('/tokens/v2/bob', sk.token)).statusCode).toBe(404)
    expect((await get(`/tokens/v2/${alice}`, sk.token)).statusCode).toBe(429)
    const api = { account: alice, source: 'api', requestId: 'r' }
    expect(await rows(h)).toEqual([
      row({ ...api, token: sk.id, outcome: 'valid' }),
      row({ ...api, token: reader.id, outcome: 'scope_missing' }),
      row({ ...api, token: sk.id, outcome: 'scope_missing' }),
      row({ ...api, token: sk.id, outcome: 'rate_limited', limit: 'requests' }),
    ])
  })

  it('introspection: the client the caller names; none when it does not count', async () => {
    own = await harness({ ...adminEnv, VERIFICATION_LOG: 'all' })
    const h = own
    const pk = h.alice.defaultToken
    const ask = (body: object) => admin(h.app, 'POST', '/introspect', body)
    expect((await ask({ token: pk.token, ip: '203.0.113.9' })).body.active).toBe(true)
    expect((await ask({ token: pk.token, count: false })).body.active).toBe(true)
    expect((await ask({ token: 'pk.nope' })).body.active).toBe(false)
    const [first, second, ...rest] = await rows(h)
    expect(rest).toEqual([])
    expect(first).toMatchObject({
      account: h.alice.username,
      token: pk.id,
      source: 'introspection',
      outcome: 'valid',
      ip: '203.0.113.9',
      origin: null,
    })
    expect(second).toMatchObject({
      account: '',
      source: 'introspection',
      outcome: 'malformed',
      ip: null,
    })
  })

  it("a verifier's refused rows, once with their batch", async () => {
    own = await harness({ ...adminEnv })
    const h = own
    const pk = h.alice.defaultToken
    const report = {
      reporter: 'edge-1',
      batch: 'b1',
      counts: [],
      refused: [
        {
          at: '2026-11-22T11:59:00.000Z',
          account: h.alice.username,
          token: pk.id,
          outcome: 'url_not_allowed',
          ip: '198.51.100.7',
          origin: 'evil.example',
          request_id: 'v-1',
          duration_us: 41,
        },
        { at: '2026-11-22T12:00:00.000Z', account: 'bob', token: pk.id, outcome: 'revoked' },
        {
          at: '2026-11-22T12:00:00.000Z',
          account: h.alice.username,
          token: pk.id,
          outcome: 'rate_limited',
          limit: 'burst',
        },
      ],
    }
    expect((await admin(h.app, 'POST', '/usage/reports', report)).body).toEqual({ counted: true })
    expect((await admin(h.app, 'POST', '/usage/reports', report)).body).toEqual({ counted: false })
    await h.ctx.verifications.log.flush()
    const stored = await verificationsRepo.list(h.ctx.db, {
      account: h.alice.username,
      from: 0,
      to: T0 + 1,
      limit: 10,
    })
    expect(stored.map(({ id, ...r }: StoredVerification) => r)).toEqual([
      {
        at: T0,
        account: h.alice.username,
        tokenId: pk.id,
        source: 'verifier',
        outcome: 'rate_limited',
        limit: 'burst',
        ip: null,
        origin: null,
        requestId: null,
        durationUs: null,
      },
      {
        at: T0 - 60_000,
        account: h.alice.username,
        tokenId: pk.id,
        source: 'verifier',
        outcome: 'url_not_allowed',
        limit: null,
        ip: '198.51.100.7',
        origin: 'evil.example',
        requestId: 'v-1',
        durationUs: 41,
      },
    ])
    // bob's revoked row names a token that is not bob's: nobody's.
    const nobody = await verificationsRepo.list(h.ctx.db, {
      account: '',
      from: 0,
      to: T0 + 1,
      limit: 10,
    })
    expect(nobody.map((r) => [r.outcome, r.tokenId])).toEqual([['revoked', '']])
  })
})

describe('VERIFICATION_LOG and the buffer', () => {
  it('refused (the default) keeps refusals only; off keeps none', async () => {
    for (const [mode, expected] of [
      [undefined, ['invalid']],
      ['refused', ['invalid']],
      ['off', []],
    ] as const) {
      const h = await harness(mode === undefined ? {} : { VERIFICATION_LOG: mode })
      const pk = h.alice.defaultToken.token as string
      await h.app.inject({ method: 'GET', url: `/tokens/v2?access_token=${pk}` })
      await h.app.inject({ method: 'GET', url: `/tokens/v2?access_token=${tampered(pk)}` })
      expect((await rows(h)).map((r) => r.outcome)).toEqual([...expected])
      await h.close()
    }
  })

  it('drops rows past the bound, never the request, and counts each one', async () => {
    own = await harness({
      VERIFICATION_LOG: 'all',
      VERIFICATION_LOG_BUFFER: '3',
      METRICS_PORT: '0',
    })
    const h = own
    const pk = h.alice.defaultToken.token
    for (let i = 0; i < 5; i++) {
      const res = await h.app.inject({ method: 'GET', url: `/tokens/v2?access_token=${pk}` })
      expect(res.statusCode).toBe(200)
    }
    expect(h.ctx.verifications.log.dropped).toBe(2)
    expect(await rows(h)).toHaveLength(3)
    const metrics = await h.ctx.metrics.registry.getSingleMetricAsString(
      'tessera_verification_log_rows_total',
    )
    expect(metrics).toContain('tessera_verification_log_rows_total{result="written"} 3')
    expect(metrics).toContain('tessera_verification_log_rows_total{result="dropped"} 2')
    // Told to the database once the instance reports them: the list may lack some.
    await h.ctx.verifications.stop()
    expect(await h.ctx.verifications.drops(T0 - 60_000, T0 + 60_000)).toBe(2)
  })
})

describe('retention', () => {
  it('removes what is older than VERIFICATION_LOG_RETENTION_DAYS, whole days on PostgreSQL', async () => {
    own = await harness({ VERIFICATION_LOG: 'all', VERIFICATION_LOG_RETENTION_DAYS: '2' })
    const h = own
    const day = 86_400_000
    const pk = h.alice.defaultToken.token
    for (const at of [T0 - 3 * day, T0 - 2 * day, T0 - day, T0]) {
      h.clock.now = at
      await h.app.inject({ method: 'GET', url: `/tokens/v2?access_token=${pk}` })
    }
    await h.ctx.verifications.log.flush()
    const postgres = h.ctx.config.db.kind === 'postgres'
    if (postgres) {
      expect(await verificationsRepo.partitions(h.ctx.db)).toEqual([
        'verifications_d20261119',
        'verifications_d20261120',
        'verifications_d20261121',
        'verifications_d20261122',
      ])
    }
    // T0 is 12:00: the cutoff, two days back, is within the 20th, which is kept whole.
    h.clock.now = T0
    await h.ctx.verifications.prune()
    expect((await rows(h)).map((r) => r.at)).toEqual([T0 - 2 * day, T0 - day, T0])
    if (postgres) {
      expect(await verificationsRepo.partitions(h.ctx.db)).toEqual([
        'verifications_d20261120',
        'verifications_d20261121',
        'verifications_d20261122',
        'verifications_d20261123',
      ])
    }
  })
})
