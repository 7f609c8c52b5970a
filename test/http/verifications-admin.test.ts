import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type StoredVerification, verificationsRepo } from '../../src/db/verifications.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/** GET /admin/v1/accounts/{username}/verifications: an account's log, filtered and paged. */

const minute = 60_000
const hour = 60 * minute
const day = 24 * hour
const origin = 'https://tokens.example.com'
const other = 'cother0000000000000000000'

let h: Harness
let a: string
beforeEach(async () => {
  // Created two days before T0: the rows below are alice's own, but one of a former alice.
  h = await harness({ ...adminEnv, PUBLIC_URL: origin }, { accountsCreated: T0 - 2 * day })
  a = h.alice.defaultToken.id
})
afterEach(() => h.close())

/** A row of alice's default token, valid, at `at`, unless `fields` say otherwise. */
const stored = (at: number, id: string, fields: Partial<StoredVerification> = {}) => ({
  at,
  id,
  account: 'alice',
  tokenId: a,
  source: 'retrieve',
  outcome: 'valid',
  limit: null,
  ip: null,
  origin: null,
  requestId: null,
  durationUs: null,
  ...fields,
})

/** The rows of the tests, oldest first (ids sort as the rows within one millisecond). */
async function seed() {
  const v02 = { ip: '203.0.113.7', origin: 'app.example.com', requestId: 'req-2', durationUs: 120 }
  const v03 = { source: 'api', outcome: 'rate_limited', limit: 'requests' }
  const v06 = { tokenId: other, source: 'introspection', outcome: 'ip_not_allowed' }
  const v07 = { tokenId: other, source: 'verifier', outcome: 'url_not_allowed' }
  await verificationsRepo.insert(h.ctx.db, [
    stored(T0 - 3 * day, 'v00', { outcome: 'revoked' }),
    stored(T0 - 25 * hour, 'v01', { outcome: 'expired', source: 'api' }),
    stored(T0 - 3 * hour, 'v02', v02),
    stored(T0 - 2 * hour, 'v03', v03),
    stored(T0 - 90 * minute, 'v04', { account: 'bob', tokenId: h.bob.defaultToken.id }),
    stored(T0 - hour, 'v05', { tokenId: '', outcome: 'malformed' }),
    stored(T0 - hour, 'v06', v06),
    stored(T0 - 30 * minute, 'v07', v07),
    stored(T0, 'v08', { source: 'api', outcome: 'scope_missing' }),
  ])
}

const iso = (ms: number) => new Date(ms).toISOString()
const q = (params: Record<string, string>) => new URLSearchParams(params).toString()
const list = (query = '', who = 'alice') =>
  admin(h.app, 'GET', `/accounts/${who}/verifications${query === '' ? '' : `?${query}`}`)
const ids = (body: { id: string }[]) => body.map((r) => r.id)
/** alice's rows from her creation to T0 (inclusive), newest first. */
const alices = ['v08', 'v07', 'v06', 'v05', 'v03', 'v02', 'v01']

describe('GET /admin/v1/accounts/{username}/verifications', () => {
  it('answers the last 24 hours of the account, newest first, each row with its reason', async () => {
    await seed()
    const res = await list()
    const { link, 'verification-log-dropped': dropped } = res.headers
    expect([res.status, link, dropped]).toEqual([200, undefined, undefined])
    // v08 is at T0, now: `to` is exclusive. v01 is 25 hours old, v04 bob's.
    expect(res.body).toEqual([
      {
        id: 'v07',
        at: iso(T0 - 30 * minute),
        token: other,
        source: 'verifier',
        outcome: 'url_not_allowed',
        reason: "The page's URL is not among the token's allowed URLs",
      },
      {
        id: 'v06',
        at: iso(T0 - hour),
        token: other,
        source: 'introspection',
        outcome: 'ip_not_allowed',
        reason: "The client's address is not among the token's allowed IPs",
      },
      {
        id: 'v05',
        at: iso(T0 - hour),
        token: null,
        source: 'retrieve',
        outcome: 'malformed',
        reason: 'Not a token string (not a pk, sk or tk token)',
      },
      {
        id: 'v03',
        at: iso(T0 - 2 * hour),
        token: a,
        source: 'api',
        outcome: 'rate_limited',
        limit: 'requests',
        reason: 'Refused by the rate limit "requests"',
      },
      {
        id: 'v02',
        at: '2026-11-22T09:00:00.000Z',
        token: a,
        source: 'retrieve',
        outcome: 'valid',
        ip: '203.0.113.7',
        origin: 'app.example.com',
        request_id: 'req-2',
        duration_us: 120,
        reason: 'Valid',
      },
    ])
  })

  it('takes from inclusive and to exclusive, as dates or timestamps with offsets', async () => {
    await seed()
    const edges = await list(q({ from: iso(T0 - 2 * hour), to: iso(T0 - 30 * minute) }))
    expect(ids(edges.body)).toEqual(['v06', 'v05', 'v03'])
    const offsets = await list(
      q({ from: '2026-11-22T11:00:00+01:00', to: '2026-11-22T12:30:00+01:00' }),
    )
    expect(ids(offsets.body)).toEqual(['v06', 'v05', 'v03'])
    const days = await list(q({ from: '2026-11-21', to: '2026-11-23' }))
    expect(ids(days.body)).toEqual(alices)
    // Only `from`: up to now; only `to`: the day before it.
    expect(ids((await list(q({ from: iso(T0 - 31 * minute) }))).body)).toEqual(['v07'])
    expect(ids((await list(q({ to: iso(T0 - 2 * hour + 1) }))).body)).toEqual(['v03', 'v02', 'v01'])
  })

  it('filters by token, by a list of outcomes and by a list of sources, together too', async () => {
    await seed()
    const range = { from: '2026-11-21', to: '2026-11-23' }
    const by = async (params: Record<string, string>) =>
      ids((await list(q({ ...range, ...params }))).body)
    expect(await by({ token: a })).toEqual(['v08', 'v03', 'v02', 'v01'])
    expect(await by({ token: other })).toEqual(['v07', 'v06'])
    expect(await by({ outcome: 'malformed,ip_not_allowed' })).toEqual(['v06', 'v05'])
    expect(await by({ outcome: ' valid , valid,expired' })).toEqual(['v02', 'v01'])
    expect(await by({ source: 'verifier,introspection' })).toEqual(['v07', 'v06'])
    const combined = { token: a, source: 'api', outcome: 'rate_limited,scope_missing' }
    expect(await by(combined)).toEqual(['v08', 'v03'])
    expect(await by({ token: 'cnosuchtoken0000000000000' })).toEqual([])
  })

  it("never shows another account's rows, nor a former account's of the same name", async () => {
    await seed()
    const wide = { from: iso(T0 - 4 * day), to: iso(T0 + 1) }
    expect(ids((await list(q(wide))).body)).toEqual(alices)
    expect(ids((await list(q(wide), 'bob')).body)).toEqual(['v04'])
    expect((await list(q({ ...wide, token: h.bob.defaultToken.id }))).body).toEqual([])
  })

  it('pages through every row exactly once, the Link keeping every filter and the range', async () => {
    await seed()
    const first = await list(
      q({ outcome: 'valid,rate_limited,malformed,ip_not_allowed', limit: '2' }),
    )
    expect(ids(first.body)).toEqual(['v06', 'v05'])
    const cursor = Buffer.from(`${T0 - hour}.v05`).toString('base64url')
    expect(first.headers.link).toBe(
      `<${origin}/admin/v1/accounts/alice/verifications?${q({
        from: iso(T0 - day),
        to: iso(T0),
        outcome: 'valid,rate_limited,malformed,ip_not_allowed',
        limit: '2',
        start: cursor,
      })}>; rel="next"`,
    )
    // Rows written meanwhile, and the clock 22 hours on: the next pages are still those of the
    // first one's range (a `from` of now less a day would leave v02 out).
    h.clock.now = T0 + 22 * hour
    await verificationsRepo.insert(h.ctx.db, [stored(T0 + minute, 'v09')])
    const seen = [...ids(first.body)]
    let link = first.headers.link as string | undefined
    while (link !== undefined) {
      const next = /^<https:\/\/tokens\.example\.com\/admin\/v1(.*)>; rel="next"$/.exec(link)?.[1]
      const res = await admin(h.app, 'GET', next as string)
      expect(res.status).toBe(200)
      seen.push(...ids(res.body))
      link = res.headers.link as string | undefined
    }
    expect(seen).toEqual(['v06', 'v05', 'v03', 'v02'])

    // Rows of one millisecond are split by id; a page ending on the last row has no Link.
    const two = await list(q({ from: iso(T0 - hour), to: iso(T0 - hour + 1), limit: '1' }))
    expect([ids(two.body), two.headers.link === undefined]).toEqual([['v06'], false])
    const start = Buffer.from(`${T0 - hour}.v06`).toString('base64url')
    const rest = await list(q({ from: iso(T0 - hour), to: iso(T0 - hour + 1), limit: '1', start }))
    expect([ids(rest.body), rest.headers.link]).toEqual([['v05'], undefined])
  })

  it('tells how many rows were dropped in the range, of any account', async () => {
    await seed()
    await verificationsRepo.addDrops(h.ctx.db, T0 - 10 * minute, 'one', 5)
    await verificationsRepo.addDrops(h.ctx.db, T0 - 10 * minute, 'two', 2)
    await verificationsRepo.addDrops(h.ctx.db, T0 - 3 * day, 'one', 40)
    const res = await list()
    expect(res.headers['verification-log-dropped']).toBe('7')
    const before = await list(q({ to: iso(T0 - 10 * minute) }))
    expect(before.headers['verification-log-dropped']).toBeUndefined()
    expect((await list('', 'bob')).headers['verification-log-dropped']).toBe('7')
  })

  it('lists what the log wrote, with its own ids', async () => {
    h.ctx.verifications.log.add({
      at: T0 - minute,
      account: 'alice',
      tokenId: a,
      source: 'api',
      outcome: 'credits_exhausted',
      limit: null,
      ip: '198.51.100.1',
      origin: null,
      requestId: 'req-x',
      durationUs: 42,
    })
    await h.ctx.verifications.log.flush()
    const res = await list()
    expect(res.body).toEqual([
      {
        id: expect.stringMatching(/^[a-z0-9]{19}$/),
        at: iso(T0 - minute),
        token: a,
        source: 'api',
        outcome: 'credits_exhausted',
        ip: '198.51.100.1',
        request_id: 'req-x',
        duration_us: 42,
        reason: 'The credits of the token (or of its account) are used up',
      },
    ])
  })
})

describe('refusals', () => {
  const invalid = (details: string) => ({ message: 'resources are invalid', details })

  it('answers 422 for a bad range, token, outcome, source, limit or cursor', async () => {
    const cases: [Record<string, string>, unknown][] = [
      [{ from: iso(T0), to: iso(T0) }, invalid('from must be before to')],
      [{ from: iso(T0 - hour), to: iso(T0 - 2 * hour) }, invalid('from must be before to')],
      [{ from: 'yesterday' }, invalid('from must be an ISO 8601 date or timestamp')],
      [{ to: '2026-02-30' }, invalid('to must be an ISO 8601 date or timestamp')],
      [
        { from: iso(T0 - 8 * day - 1), to: iso(T0) },
        invalid(
          'from must be at most 8 days before to: rows are kept 7 days (VERIFICATION_LOG_RETENTION_DAYS)',
        ),
      ],
      [{ token: 'cshort' }, { message: 'resources are invalid' }],
      [
        { outcome: 'valid,refused' },
        invalid(
          'outcome must be a comma-separated list of valid, malformed, invalid, expired, revoked, ' +
            'rate_limited, url_not_allowed, ip_not_allowed, scope_missing, credits_exhausted; not refused',
        ),
      ],
      [
        { source: 'retrieve,dashboard' },
        invalid(
          'source must be a comma-separated list of retrieve, api, introspection, verifier; not dashboard',
        ),
      ],
      [{ limit: '0' }, { message: 'limit must be an integer between 1 and 100' }],
      [{ limit: '101' }, { message: 'limit must be an integer between 1 and 100' }],
      [{ start: 'garbage!' }, { message: 'start is invalid' }],
      [{ start: Buffer.from('12.x y').toString('base64url') }, { message: 'start is invalid' }],
      [
        { start: Buffer.from('not a cursor').toString('base64url') },
        { message: 'start is invalid' },
      ],
      // Base64 with padding is not the cursor's own spelling.
      [{ start: Buffer.from(`${T0}.v1`).toString('base64') }, { message: 'start is invalid' }],
    ]
    for (const [params, body] of cases) {
      const res = await list(q(params))
      expect([params, res.status, res.body]).toEqual([params, 422, expect.objectContaining(body)])
    }
    // The range of the days kept and one more is allowed.
    expect((await list(q({ from: iso(T0 - 8 * day), to: iso(T0) }))).status).toBe(200)
  })

  it('answers 404 for an unknown account and 401 without an operator key', async () => {
    expect(await list('', 'nobody')).toMatchObject({
      status: 404,
      body: { message: 'No such user', details: 'no such account: nobody' },
    })
    const res = await admin(h.app, 'GET', '/accounts/alice/verifications', undefined, null)
    expect([res.status, res.body]).toEqual([401, { message: 'Unauthorized' }])
    const wrong = await admin(h.app, 'GET', '/accounts/alice/verifications', undefined, 'nope')
    expect(wrong.status).toBe(401)
  })
})
