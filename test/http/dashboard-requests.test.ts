import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { type StoredVerification, verificationsRepo } from '../../src/db/verifications.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { DashboardClient, titleOf } from './dashboard-client.js'

/**
 * The Requests page (the verification log of the account: filtered by token, outcome and time,
 * newest first, 50 a page, each refusal in words) and the Usage page's latency chart.
 */

const password = 'correct horse battery staple'
const minute = 60_000
const hour = 60 * minute
const day = 24 * hour

let h: Harness
let owner: DashboardClient
const tokens = { website: '', backend: '', old: '', bobs: '' }

async function holderOf(username: string) {
  const b = new DashboardClient(h.app)
  const link = await h.ctx.holders.invite(username, cliActor)
  const done = await b.post(`/account/setup/${link}`, { password, confirm: password })
  expect(done).toMatchObject({ status: 303, location: '/account' })
  await b.get('/account')
  return b
}

/** The owner invites a viewer, who joins in a browser of their own. */
async function viewer(login: string) {
  const made = await owner.post('/account/members/invite', {
    email: `${login}@example.com`,
    role: 'viewer',
  })
  const path = /\/account\/invitations\/[A-Za-z0-9_-]{43}/.exec(made.body)?.[0] as string
  const b = new DashboardClient(h.app)
  await b.get(path)
  expect((await b.post(path, { login, password, confirm: password })).status).toBe(303)
  await b.get('/account')
  return b
}

const entities: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
}
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(amp|lt|gt|quot|#39);/g, (e) => entities[e] ?? e)
    .replace(/\s+/g, ' ')
    .trim()

/** The cells of each body row of the table of class `kind`, as text. */
function rowsOf(body: string, kind: string): string[][] {
  const table = new RegExp(`<table class="${kind}">[\\s\\S]*?<tbody>([\\s\\S]*?)</tbody>`)
  const tbody = table.exec(body)?.[1] ?? ''
  return [...tbody.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...(row[1] ?? '').matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => text(c[1] ?? '')),
  )
}

let n = 0
const row = (at: number, tokenId: string, o: Partial<StoredVerification> = {}) => ({
  at,
  id: `test${String(++n).padStart(15, '0')}`,
  account: 'alice',
  tokenId,
  source: 'retrieve',
  outcome: 'valid',
  limit: null,
  ip: null,
  origin: null,
  requestId: null,
  durationUs: null,
  ...o,
})
const insert = (rows: StoredVerification[]) => verificationsRepo.insert(h.ctx.db, rows)
const stamp = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`

/**
 * alice: a valid and a refused retrieve of website at 13:20, backend rate limited at 13:10, a
 * temporary token expired at 13:00, the deleted token `old` revoked at 12:10 (verifier), a valid
 * one of backend at 10:00, and one of website three days ago. bob: one at 13:25. Now is 13:30.
 */
async function seed() {
  h.clock.now = T0 + 90 * minute
  await insert([
    row(T0 + 80 * minute + 5000, tokens.website, {
      ip: '203.0.113.5',
      origin: 'app.example.com',
      requestId: 'req-1',
      durationUs: 1420,
    }),
    row(T0 + 80 * minute, tokens.website, {
      source: 'verifier',
      outcome: 'url_not_allowed',
      origin: 'evil.example',
      requestId: '<script>x</script>',
      durationUs: 380,
    }),
    row(T0 + 70 * minute, tokens.backend, {
      source: 'api',
      outcome: 'rate_limited',
      limit: 'burst',
      ip: '2001:db8::7',
      durationUs: 95,
    }),
    row(T0 + 60 * minute, '', { source: 'introspection', outcome: 'expired' }),
    row(T0 + 10 * minute, tokens.old, { source: 'verifier', outcome: 'revoked', durationUs: 0 }),
    row(T0 - 2 * hour, tokens.backend, { durationUs: 2000 }),
    row(T0 - 3 * day, tokens.website, { durationUs: 640 }),
    row(T0 + 85 * minute, tokens.bobs, { account: 'bob', ip: '198.51.100.9', requestId: 'bob-1' }),
  ])
}

const all = [
  [
    stamp(T0 + 80 * minute + 5000),
    'website',
    'Retrieve',
    'Valid',
    '—',
    '203.0.113.5',
    'app.example.com',
    '1.42 ms',
    'req-1',
  ],
  [
    stamp(T0 + 80 * minute),
    'website',
    'Verifier',
    'URL not allowed',
    "The page's URL is not among the token's allowed URLs",
    '—',
    'evil.example',
    '380 µs',
    '<script>x</script>',
  ],
  [
    stamp(T0 + 70 * minute),
    'backend',
    'Token API',
    'Rate limited',
    'Refused by the rate limit "burst"',
    '2001:db8::7',
    '—',
    '95 µs',
    '—',
  ],
  [
    stamp(T0 + 60 * minute),
    '—',
    'Introspection',
    'Expired',
    'The token has expired (a temporary token past its expires, or a token past its end of life)',
    '—',
    '—',
    '—',
    '—',
  ],
  [
    stamp(T0 + 10 * minute),
    '', // replaced below: the deleted token's id
    'Verifier',
    'Revoked',
    'The token was revoked (deleted, or its account disabled)',
    '—',
    '—',
    '0 µs',
    '—',
  ],
  [stamp(T0 - 2 * hour), 'backend', 'Retrieve', 'Valid', '—', '—', '—', '2.00 ms', '—'],
]

beforeEach(async () => {
  // Every verification kept (the default keeps refusals only: its notice is tested below).
  h = await harness({ VERIFICATION_LOG: 'all' }, { accountsCreated: T0 - 60 * day })
  owner = await holderOf('alice')
  // A millisecond apart: the Token filter lists them in created order.
  tokens.website = (await h.token('alice', ['styles:read'], { note: 'website' })).id
  h.clock.now += 1
  tokens.backend = (await h.token('alice', ['styles:read'], { note: 'backend' })).id
  h.clock.now += 1
  const old = await h.token('alice', [], { note: 'old' })
  tokens.old = old.id
  const alice = await h.ctx.accounts.find('alice')
  if (alice) await h.ctx.tokens.remove(alice, old.id, cliActor)
  tokens.bobs = (await h.token('bob', [], { note: 'bob thing' })).id
  ;(all[4] as string[])[1] = `Deleted token ${tokens.old}`
})
afterEach(() => h.close())

describe('the Requests page', () => {
  it("is in the navigation, and lists the last 24 hours' requests newest first, each refusal in words", async () => {
    await seed()
    expect((await owner.get('/account')).body).toContain('<a href="/account/requests">Requests</a>')
    const page = await owner.get('/account/requests')
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(titleOf(page.body)).toBe('Requests')
    expect(page.body).toContain('<a href="/account/requests" aria-current="page">Requests</a>')
    expect(rowsOf(page.body, 'requests')).toEqual(all)
    expect(page.body).toContain(
      `<time datetime="${new Date(T0 + 80 * minute + 5000).toISOString()}">`,
    )
    expect(page.body).toContain(`<a href="/account/tokens/${tokens.website}">website</a>`)
    expect(page.body).toContain('<code>&lt;script&gt;x&lt;/script&gt;</code>')
    expect(page.body).not.toContain('<script>x')
    // The filter: a GET form, its choices as sent, the account's tokens by name.
    expect(page.body).toContain('<form method="get" action="/account/requests"')
    const options = [...page.body.matchAll(/<option value="([^"]*)"( selected)?>([^<]*)</g)]
    const select = (from: string, to: string) => {
      const list = options.map((m) => [m[1], m[3], m[2] !== undefined])
      const start = list.findIndex((o) => o[0] === from)
      return list.slice(start, list.findIndex((o, i) => i > start && o[0] === to) + 1)
    }
    expect(select('', tokens.backend)).toEqual([
      ['', 'All tokens', true],
      [h.alice.defaultToken.id, 'Default public token', false],
      [tokens.website, 'website', false],
      [tokens.backend, 'backend', false],
    ])
    expect(options.map((m) => m[3]).slice(4)).toEqual([
      'All',
      'Refused',
      'Valid',
      'Malformed',
      'Invalid',
      'Expired',
      'Revoked',
      'Rate limited',
      'URL not allowed',
      'IP not allowed',
      'Scope missing',
      'Credits exhausted',
      'Last hour',
      'Last 24 hours',
      'Last 7 days',
    ])
    expect(page.body).toContain('<option value="24h" selected>Last 24 hours</option>')
    expect(page.body).toContain('<button type="submit" class="secondary">Filter</button>')
    expect(page.body).not.toContain('Older')
    expect(page.body).not.toContain('class="warning"')
  })

  it('filters by token, outcome, refusals and time, and says when nothing matches', async () => {
    await seed()
    const rows = async (query: string) => rowsOf((await owner.get(query)).body, 'requests')
    expect(await rows(`/account/requests?token=${tokens.website}`)).toEqual(all.slice(0, 2))
    expect(await rows('/account/requests?outcome=refused')).toEqual(all.slice(1, 5))
    expect(await rows('/account/requests?outcome=rate_limited')).toEqual([all[2]])
    expect(await rows('/account/requests?time=1h')).toEqual(all.slice(0, 4))
    const week = await rows('/account/requests?time=7d')
    expect(week.slice(0, 6)).toEqual(all)
    expect(week[6]?.slice(0, 2)).toEqual([stamp(T0 - 3 * day), 'website'])
    expect(week).toHaveLength(7)
    const both = await owner.get(
      `/account/requests?token=${tokens.backend}&outcome=refused&time=1h`,
    )
    expect(rowsOf(both.body, 'requests')).toEqual([all[2]])
    expect(both.body).toContain(`<option value="${tokens.backend}" selected>backend</option>`)
    expect(both.body).toContain('<option value="refused" selected>Refused</option>')
    expect(both.body).toContain('<option value="1h" selected>Last hour</option>')
    // The form's own empty choices are the defaults.
    const sent = await owner.get('/account/requests?token=&outcome=&time=24h')
    expect(rowsOf(sent.body, 'requests')).toEqual(all)
    const none = await owner.get(`/account/requests?token=${tokens.website}&outcome=expired`)
    expect(none.status).toBe(200)
    expect(none.body).toContain('<p class="card none">No requests in this period.</p>')
    expect(none.body).not.toContain('<table class="requests">')
  })

  it('pages 50 rows a page, newest first, with Older keeping the filter; every row once', async () => {
    h.clock.now = T0 + 90 * minute
    // 130 refusals of website, two to a second (the cursor's tie-break is the id), and noise.
    const seeded = Array.from({ length: 130 }, (_, i) =>
      row(T0 + Math.floor(i / 2) * 1000, tokens.website, {
        outcome: 'revoked',
        requestId: `r${i}`,
      }),
    )
    await insert([
      ...seeded,
      row(T0 + 500, tokens.website),
      row(T0 + 700, tokens.backend, { outcome: 'revoked' }),
    ])
    const expected = [...seeded].reverse().map((r) => r.requestId)
    const seen: string[] = []
    let url: string | undefined = `/account/requests?token=${tokens.website}&outcome=revoked`
    const pages: number[] = []
    while (url !== undefined) {
      const page = await owner.get(url)
      expect(page.status).toBe(200)
      const found = rowsOf(page.body, 'requests')
      pages.push(found.length)
      seen.push(...found.map((cells) => cells[8] as string))
      const older = /<a href="([^"]+)">Older<\/a>/.exec(page.body)?.[1]?.replaceAll('&amp;', '&')
      if (older !== undefined) {
        expect(older).toMatch(
          new RegExp(`^/account/requests\\?token=${tokens.website}&outcome=revoked&start=[\\w-]+$`),
        )
      }
      if (pages.length > 1) {
        expect(page.body).toContain(
          `<a href="/account/requests?token=${tokens.website}&amp;outcome=revoked">Newest requests</a>`,
        )
      }
      url = older
    }
    expect(pages).toEqual([50, 50, 30])
    expect(seen).toEqual(expected)
  })

  it("never shows another account's rows, and answers 404 for another account's token", async () => {
    // Invited while the owner's sign-in is recent (inviting asks for a recent proof).
    const vic = await viewer('vic')
    await seed()
    const page = await owner.get('/account/requests?time=7d')
    for (const secret of ['198.51.100.9', 'bob-1', tokens.bobs]) {
      expect(page.body).not.toContain(secret)
    }
    const theirs = await owner.get(`/account/requests?token=${tokens.bobs}`)
    expect(theirs.status).toBe(404)
    expect(titleOf(theirs.body)).toBe('Page not found')
    expect(theirs.body).not.toContain('bob-1')

    // bob, a member of another account, sees his own rows only, and none of alice's tokens.
    const bob = await holderOf('bob')
    const his = await bob.get('/account/requests')
    expect(rowsOf(his.body, 'requests').map((cells) => cells.slice(1, 3))).toEqual([
      ['bob thing', 'Retrieve'],
    ])
    expect(his.body).not.toContain('website')
    for (const id of [tokens.website, tokens.old]) {
      expect((await bob.get(`/account/requests?token=${id}`)).status).toBe(404)
    }
    // A viewer of alice's account sees the page as the owner does.
    expect(rowsOf((await vic.get('/account/requests')).body, 'requests')).toEqual(all)
  })

  it('refuses an address its form does not make', async () => {
    const start = (s: string) => Buffer.from(s).toString('base64url')
    for (const bad of [
      'token=xyz',
      'token=C0000000000000000000000000',
      'outcome=nope',
      'outcome=__proto__',
      'time=2d',
      'time=toString',
      'start=%21%21',
      `start=${start('12.')}`,
      `start=${start('x.abc')}`,
      `start=${start('12.a-b')}`,
    ]) {
      const refused = await owner.get(`/account/requests?${bad}`)
      expect(refused.status, bad).toBe(422)
      expect(titleOf(refused.body)).toBe('Request refused')
      expect(refused.body).toContain('This is not the address of a page of your requests.')
    }
    expect((await owner.get(`/account/requests?start=${start('1.abc')}`)).status).toBe(200)
  })

  it('says when rows of the period were dropped, and asks to sign in first', async () => {
    await seed()
    await verificationsRepo.addDrops(h.ctx.db, T0 - 2 * day, 'inst0001', 5)
    const clean = await owner.get('/account/requests')
    expect(clean.body).not.toContain('not recorded')
    expect((await owner.get('/account/requests?time=7d')).body).toContain(
      `<p class="warning">Some requests of this period were not recorded (the log's buffer was full).</p>`,
    )
    const anonymous = new DashboardClient(h.app)
    const page = await anonymous.get('/account/requests?time=1h')
    expect(page.status).toBe(303)
    expect(page.location).toBe(
      `/account/sign-in?next=${encodeURIComponent('/account/requests?time=1h')}`,
    )
  })
})

describe('the request log switched off or to refusals', () => {
  for (const [mode, words] of [
    ['off', 'The request log is off (VERIFICATION_LOG=off).'],
    [
      'refused',
      'Only refused requests are kept (VERIFICATION_LOG=refused): valid ones are counted on the Usage page, not listed here.',
    ],
  ] as const) {
    it(`says so on the Requests page and the latency chart (${mode})`, async () => {
      await h.close()
      h = await harness({ VERIFICATION_LOG: mode }, { accountsCreated: T0 - 60 * day })
      owner = await holderOf('alice')
      const page = await owner.get('/account/requests')
      expect(page.body).toContain(`<p class="warning">${words}</p>`)
      expect(page.body).toContain('No requests in this period.')
      const usage = await owner.get('/account/usage')
      expect(usage.body).toContain(
        mode === 'off'
          ? '<p class="chart-empty">The request log is off (VERIFICATION_LOG=off): there is no latency to chart.</p>'
          : '<p class="chart-empty">Nothing to chart: no request was timed in the last 24 hours.</p>',
      )
    })
  }
})

describe("the Usage page's latency chart", () => {
  /** 10 rows at 12:10 (100 to 1,000 µs), 2 at 13:05 (2 and 4 ms), and rows it leaves out. */
  async function timed() {
    h.clock.now = T0 + 90 * minute
    await insert([
      ...Array.from({ length: 10 }, (_, i) =>
        row(T0 + 10 * minute, tokens.website, { durationUs: (i + 1) * 100 }),
      ),
      row(T0 + 65 * minute, tokens.backend, { durationUs: 2000, outcome: 'revoked' }),
      row(T0 + 65 * minute, tokens.backend, { durationUs: 4000 }),
      row(T0 + 66 * minute, tokens.backend, { durationUs: null }),
      row(T0 + 66 * minute, tokens.bobs, { account: 'bob', durationUs: 90_000 }),
      row(T0 - 30 * hour, tokens.backend, { durationUs: 80_000 }),
    ])
  }

  it('draws p50 and p99 by hour beside the outcome chart, with the figures as a table', async () => {
    await timed()
    const page = await owner.get('/account/usage')
    expect(page.status).toBe(200)
    expect(page.body).toContain('<h2 id="latency-heading">Latency</h2>')
    expect(page.body).toContain(
      '<p class="usage-summary" id="latency-summary"><strong>12</strong> requests timed in the last 24 hours. Slowest hour: p99 4.00 ms, p50 2.00 ms, 2026-11-22 13:00 UTC.</p>',
    )
    expect(page.body).toContain(
      '<svg class="latency-chart" role="img" aria-label="Latency by hour, p50 and p99, last 24 hours" aria-describedby="latency-summary" viewBox="0 0 240 100" preserveAspectRatio="none" focusable="false">',
    )
    expect(page.body).toContain('<p class="chart-scale">Top 4.00 ms · times in UTC</p>')
    // 12:00 is the 23rd bucket of the 24 ending with 13:00; the top is the slowest p99, at y 2.
    expect(page.body).toContain(
      '<path class="p99" d="M220 74L230 74L230 2L240 2" vector-effect="non-scaling-stroke"></path>',
    )
    expect(page.body).toContain(
      '<path class="p50" d="M220 86L230 86L230 50L240 50" vector-effect="non-scaling-stroke"></path>',
    )
    expect(page.body).toContain(
      '<title>2026-11-22 12:00 UTC: p50 0.50 ms, p99 1.00 ms, 10 requests</title>',
    )
    expect(page.body).not.toMatch(/\sstyle=/)
    expect(rowsOf(page.body, 'latency')).toEqual([
      ['2026-11-22 12:00', '10', '0.50', '1.00'],
      ['2026-11-22 13:00', '2', '2.00', '4.00'],
    ])
    expect(page.body).toContain('<summary>Latency by hour as a table</summary>')
    // Beside the outcome chart: both cards in one grid.
    expect(page.body).toMatch(
      /<div class="charts">\s*<section aria-labelledby="verifications-heading"[\s\S]*?<\/section>\s*<section aria-labelledby="latency-heading"/,
    )
    expect(page.body).toContain('<a href="/account/requests">See each request</a>')
  })

  it('draws the last 30 days by day, and says how long requests are kept', async () => {
    await timed()
    const page = await owner.get('/account/usage?period=30d')
    expect(page.body).toContain(
      '<svg class="latency-chart" role="img" aria-label="Latency by day, p50 and p99, last 30 days"',
    )
    expect(rowsOf(page.body, 'latency')).toEqual([
      ['2026-11-21', '1', '80.00', '80.00'],
      ['2026-11-22', '12', '0.60', '4.00'],
    ])
    expect(page.body).toContain(
      '<p class="hint">Requests are kept for 7 days: older days have none.</p>',
    )
  })

  it('says when nothing was timed', async () => {
    const page = await owner.get('/account/usage')
    expect(page.body).toContain(
      '<p class="usage-summary" id="latency-summary"><strong>0</strong> requests timed in the last 24 hours.</p><p class="chart-empty">Nothing to chart: no request was timed in the last 24 hours.</p>',
    )
    expect(page.body).not.toContain('<svg class="latency-chart"')
  })
})
