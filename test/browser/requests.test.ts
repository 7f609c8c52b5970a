import path from 'node:path'
import Database from 'better-sqlite3'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browserAvailable } from './browser.js'
import {
  checkbox,
  click,
  expectAccessible,
  field,
  follow,
  heading,
  inspect,
  link,
  pathAndQuery,
  rowTexts,
  signedIn,
  tokenId,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const hourMs = 3_600_000
const images = path.resolve(import.meta.dirname, '../../docs/images')
const desktop = { viewport: { width: 1280, height: 800 } }
const outcomes = [
  'valid',
  'malformed',
  'invalid',
  'expired',
  'revoked',
  'rate_limited',
  'url_not_allowed',
  'ip_not_allowed',
  'scope_missing',
  'credits_exhausted',
] as const
type Outcome = (typeof outcomes)[number]
/** better-sqlite3 objects this file made: kept, as src/db/database.ts keeps its own (Node 24). */
const keptForever: unknown[] = []

/** A screenshot for the docs, 1280 px wide: from the page's title to the bottom of `to`. */
async function docsImage(page: Page, name: string, to: Locator, width = 1280) {
  const top = await page.getByRole('heading', { level: 1 }).boundingBox()
  const end = await to.boundingBox()
  if (top === null || end === null) throw new Error(`${name}: nothing to show`)
  const y = Math.max(0, top.y - 24)
  const clip = { x: 0, y, width, height: end.y + end.height + 24 - y }
  await page.screenshot({ path: path.join(images, `${name}.png`), fullPage: true, clip })
}

/** Whether the page is wider than the window (a phone would scroll sideways). */
const overflows = (page: Page) =>
  page.evaluate(
    '(() => document.documentElement.scrollWidth > document.documentElement.clientWidth)()',
  )

interface Seeded {
  at: number
  token: string
  source: string
  outcome: Outcome
  limit: string | null
  ip: string
  origin: string | null
  us: number
}

/**
 * 24 hours of an account in use, into the log and the counts alike (so the two charts agree):
 * busier by day, now and then a page on a host the website token does not allow, the backend
 * rate limited in its busiest hours, temporary tokens used after they expired; most answers in
 * a few hundred microseconds, a slow one here and there, one slow hour.
 */
function history(now: number, tokens: { website: string; backend: string }): Seeded[] {
  let seed = 7
  const random = () => {
    seed = (seed * 16_807) % 2_147_483_647
    return seed / 2_147_483_647
  }
  const rows: Seeded[] = []
  const first = Math.floor(now / hourMs) * hourMs - 23 * hourMs
  for (let hour = first; hour < first + 23 * hourMs; hour += hourMs) {
    const daytime = Math.max(0, Math.sin(((new Date(hour).getUTCHours() - 6) / 24) * 2 * Math.PI))
    const busy = Math.round((6 + 34 * daytime) * (0.7 + 0.6 * random()))
    const slow = hour === first + 15 * hourMs ? 6 : 1
    for (let i = 0; i < busy; i++) {
      const kind = random()
      const us = Math.round((120 + 260 * random()) * (1 + 14 * random() ** 12) * slow)
      const at = hour + Math.floor(random() * hourMs)
      const ip = `203.0.113.${1 + Math.floor(random() * 6)}`
      if (kind < 0.6) {
        // A page on a host the token does not allow: refused by the verifier in a service.
        const outcome = random() < 0.04 ? 'url_not_allowed' : 'valid'
        const origin = outcome === 'valid' ? 'app.example.com' : 'mirror.example.net'
        rows.push({
          at,
          token: tokens.website,
          source: outcome === 'valid' ? 'retrieve' : 'verifier',
          outcome,
          limit: null,
          ip,
          origin,
          us,
        })
      } else if (kind < 0.9) {
        const limited = daytime > 0.8 && random() < 0.3
        const outcome = limited ? 'rate_limited' : 'valid'
        const limit = limited ? 'requests' : null
        rows.push({
          at,
          token: tokens.backend,
          source: 'api',
          outcome,
          limit,
          ip: '198.51.100.20',
          origin: null,
          us,
        })
      } else {
        const outcome = random() < 0.3 ? 'expired' : 'valid'
        rows.push({
          at,
          token: '',
          source: 'introspection',
          outcome,
          limit: null,
          ip,
          origin: null,
          us,
        })
      }
    }
  }
  return rows.sort((a, b) => a.at - b.at)
}

/** The rows into the log, their counts into usage, and the account as old as its history. */
function seed(file: string, rows: Seeded[]) {
  const db = new Database(file)
  try {
    const log = db.prepare(
      `insert into verifications (at, id, account, token_id, source, outcome, limit_name, ip, origin, request_id, duration_us)
       values (?, ?, 'acme', ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    const columns = outcomes.join(', ')
    const adds = outcomes.map((o) => `${o} = ${o} + excluded.${o}`).join(', ')
    const upsert = (table: string) =>
      db.prepare(
        `insert into ${table} (account, at, token_id, ${columns}) values ('acme', ?, ?, ${outcomes.map(() => '?').join(', ')})
         on conflict (account, at, token_id) do update set ${adds}`,
      )
    const hours = upsert('usage_hours')
    const days = upsert('usage_days')
    keptForever.push(db, log, hours, days)
    db.exec('begin')
    rows.forEach((r, n) => {
      const id = `seed${n.toString(36).padStart(11, '0')}`
      const requestId = `k3v9q2xd-${(n + 4000).toString(36)}`
      log.run(r.at, id, r.token, r.source, r.outcome, r.limit, r.ip, r.origin, requestId, r.us)
      const counts = outcomes.map((o) => (o === r.outcome ? 1 : 0))
      const hour = new Date(r.at).toISOString().slice(0, 13)
      hours.run(hour, r.token, ...counts)
      days.run(hour.slice(0, 10), r.token, ...counts)
    })
    const created = new Date(Date.now() - 2 * 24 * hourMs).toISOString()
    db.prepare(`update accounts set created = ? where username = 'acme'`).run(created)
    db.exec('commit')
  } finally {
    db.close()
  }
}

/**
 * The Requests page and the Usage page's latency chart as a holder sees them: requests through
 * the API written by the server's log, 24 hours of history added while it was stopped, the
 * filter and Older, axe in both themes, a phone's width, and the docs' screenshots.
 */
describe.skipIf(!available)('the Requests page and the latency chart', () => {
  // Every verification, valid ones too (the default keeps refusals only).
  const dash = useDashboard({ env: { VERIFICATION_LOG: 'all' } })
  let context: BrowserContext
  let page: Page
  const tokens = { website: '', backend: '', old: '' }
  const strings = { website: '', backend: '', old: '' }

  beforeAll(async () => {
    ;({ context, page } = await signedIn(dash.browser, dash.server, 'acme', undefined, desktop))
  })
  afterAll(async () => {
    await context?.close()
  })

  async function create(note: string, scopes: string[], urls = '') {
    await follow(page, 'Access tokens')
    await follow(page, 'Create a token')
    await field(page, 'Note').fill(note)
    for (const scope of scopes) await checkbox(page, scope).check()
    await field(page, 'Allowed URLs').fill(urls)
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    const token = await field(page, 'New token').inputValue()
    await follow(page, 'Back to access tokens')
    return { id: await tokenId(page, note), token }
  }

  const retrieve = async (token: string, origin?: string) => {
    const answer = await context.request.get(`${dash.server.url}/tokens/v2?access_token=${token}`, {
      headers: origin === undefined ? {} : { origin },
    })
    return ((await answer.json()) as { code: string }).code
  }

  it('logs requests through the API; the server writes them when it stops', async () => {
    const website = await create('website', ['styles:read'])
    const backend = await create('backend', ['tokens:read', 'styles:read'])
    const old = await create('old', ['styles:read'])
    Object.assign(tokens, { website: website.id, backend: backend.id, old: old.id })
    Object.assign(strings, { website: website.token, backend: backend.token, old: old.token })
    for (let i = 0; i < 3; i++) {
      expect(await retrieve(website.token, 'https://app.example.com')).toBe('TokenValid')
    }
    await follow(page, 'old')
    await click(page, 'Delete token')
    await click(page, 'Delete')
    expect(await retrieve(old.token)).toBe('TokenRevoked')
    const listed = await context.request.get(
      `${dash.server.url}/tokens/v2/acme?access_token=${backend.token}`,
    )
    expect(listed.status()).toBe(200)
    await dash.server.kill('SIGTERM')
    seed(path.join(dash.server.env.DATA_DIR as string, 'tessera.db'), history(Date.now(), tokens))
    await dash.restart()
  })

  it('lists them newest first, each refusal in words, filtered by token and outcome', async () => {
    await page.goto(`${dash.server.url}/account`)
    await follow(page, 'Requests')
    expect(await heading(page)).toBe('Requests')
    await expect(link(page, 'Requests').getAttribute('aria-current')).resolves.toBe('page')
    const table = page.getByRole('table', { name: 'Requests, newest first' })
    const rows = (await rowTexts(table.getByRole('row'))).slice(1)
    expect(rows).toHaveLength(50)
    const time = /^\d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d UTC$/
    const took = /^(\d+ µs|\d+\.\d\d ms)$/
    const newest = rows.slice(0, 5).map(([at, ...cells]) => {
      expect(at).toMatch(time)
      expect(cells[6]).toMatch(took)
      expect(cells[7]).toMatch(/^[a-z0-9]{8}-[a-z0-9]+$/)
      return cells.slice(0, 6)
    })
    expect(newest).toEqual([
      ['backend', 'Token API', 'Valid', '—', '127.0.0.1', '—'],
      [
        `Deleted token ${tokens.old}`,
        'Retrieve',
        'Revoked',
        'The token was revoked (deleted, or its account disabled)',
        '127.0.0.1',
        '—',
      ],
      ...Array.from({ length: 3 }, () => [
        'website',
        'Retrieve',
        'Valid',
        '—',
        '127.0.0.1',
        'app.example.com',
      ]),
    ])
    await expect(link(table, 'website').first().getAttribute('href')).resolves.toBe(
      `/account/tokens/${tokens.website}`,
    )
    await inspect(page, 'requests')
    await page.emulateMedia({ colorScheme: 'dark' })
    await inspect(page, 'requests-dark')
    await page.emulateMedia({ colorScheme: 'light' })
    await docsImage(page, 'requests', table.getByRole('row').nth(12))

    await field(page, 'Token').selectOption({ label: 'backend' })
    await field(page, 'Outcome').selectOption({ label: 'Refused' })
    await click(page, 'Filter')
    expect(pathAndQuery(page.url())).toBe(
      `/account/requests?token=${tokens.backend}&outcome=refused&time=24h`,
    )
    const refused = (await rowTexts(table.getByRole('row'))).slice(1)
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) {
      expect(r.slice(1, 5)).toEqual([
        'backend',
        'Token API',
        'Rate limited',
        'Refused by the rate limit "requests"',
      ])
    }
    await expect(field(page, 'Outcome').inputValue()).resolves.toBe('refused')
    // The history has no revoked row: the deleted token's try is the last hour's only one.
    await field(page, 'Token').selectOption({ label: 'All tokens' })
    await field(page, 'Outcome').selectOption({ label: 'Revoked' })
    await field(page, 'Time').selectOption({ label: 'Last hour' })
    await click(page, 'Filter')
    const revoked = (await rowTexts(table.getByRole('row'))).slice(1)
    expect(revoked.map((r) => r[1])).toEqual([`Deleted token ${tokens.old}`])
    await expectAccessible(page, 'requests-filtered')
  })

  it('pages with Older, and back to the newest', async () => {
    await page.goto(`${dash.server.url}/account/requests`)
    const table = page.getByRole('table', { name: 'Requests, newest first' })
    const first = (await rowTexts(table.getByRole('row'))).slice(1)
    await follow(page, 'Older')
    expect(pathAndQuery(page.url())).toMatch(/^\/account\/requests\?start=[\w-]+$/)
    const second = (await rowTexts(table.getByRole('row'))).slice(1)
    expect(second).toHaveLength(50)
    // Older, strictly: the second page starts where the first ended.
    const msOf = (shown = '') => Date.parse(shown.replace(' UTC', 'Z').replace(/\s/, 'T'))
    expect(msOf(second[0]?.[0])).toBeLessThanOrEqual(msOf(first[49]?.[0]))
    expect(second.map((r) => r[8])).not.toContain(first[49]?.[8])
    await follow(page, 'Newest requests')
    expect(pathAndQuery(page.url())).toBe('/account/requests')
  })

  it('draws latency beside the outcome chart on the Usage page, with its figures as a table', async () => {
    await follow(page, 'Usage')
    const card = page.getByRole('region', { name: 'Latency', exact: true })
    const chart = card.getByRole('img', { name: 'Latency by hour, p50 and p99, last 24 hours' })
    await expect(chart.count()).resolves.toBe(1)
    const summary = (await card.locator('#latency-summary').innerText()).trim()
    const said =
      /^([\d,]+) requests timed in the last 24 hours\. Slowest hour: p99 ([\d.]+) ms, p50 ([\d.]+) ms, (\d{4}-\d\d-\d\d \d\d:00) UTC\.$/.exec(
        summary,
      )
    expect(said, summary).not.toBeNull()
    await card.getByText('Latency by hour as a table', { exact: true }).click()
    const figures = card.getByRole('table', {
      name: /^Latency by hour, last 24 hours, oldest first/,
    })
    const rows = (await rowTexts(figures.getByRole('row'))).slice(1)
    expect(rows.length).toBeGreaterThanOrEqual(23)
    // The table says what the summary says: the requests timed, the slowest hour's p99.
    const timed = rows.reduce((n, r) => n + Number((r[1] ?? '').replace(/,/g, '')), 0)
    expect(timed).toBe(Number(said?.[1]?.replace(/,/g, '')))
    const slowest = rows.reduce((a, r) => (Number(r[3]) > Number(a[3]) ? r : a))
    expect([slowest[0], slowest[3], slowest[2]]).toEqual([said?.[4], said?.[2], said?.[3]])
    await card.getByText('Latency by hour as a table', { exact: true }).click()
    await expect(chart.locator('path.p50').getAttribute('d')).resolves.toMatch(/^M\d/)
    await inspect(page, 'usage-latency')
    const charts = page.locator('div.charts')
    // The Usage page of the docs: from its title to the token lists, both charts drawn.
    await docsImage(page, 'usage', page.locator('div.columns'))
    await page.emulateMedia({ colorScheme: 'dark' })
    await inspect(page, 'usage-latency-dark')
    await charts.screenshot({ path: path.join(images, 'usage-charts-dark.png') })
    await page.emulateMedia({ colorScheme: 'light' })
  })

  it('lays both pages out for a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${dash.server.url}/account/requests`)
    expect(await overflows(page)).toBe(false)
    await inspect(page, 'requests-phone')
    const table = page.getByRole('table', { name: 'Requests, newest first' })
    await docsImage(page, 'requests-phone', table.getByRole('row').nth(3), 390)
    await follow(page, 'Usage')
    expect(await overflows(page)).toBe(false)
    await inspect(page, 'usage-latency-phone')
    await page.setViewportSize(desktop.viewport)
  })
})
