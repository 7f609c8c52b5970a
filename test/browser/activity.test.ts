import path from 'node:path'
import Database from 'better-sqlite3'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  checkbox,
  click,
  field,
  follow,
  heading,
  inspect,
  link,
  pathOf,
  rowTexts,
  screenshotDir,
  signedIn,
  signIn,
  tokenId,
  tokenRow,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const hourMs = 3_600_000
const minuteMs = 60_000
/** better-sqlite3 objects this file made (see the seeding below). */
const keptForever: unknown[] = []

/**
 * The Activity page and the use of each token (Last used, the chart of verifications by outcome),
 * as a holder sees them, in the light and the dark theme, with axe on every page.
 *
 * Validations are counted in the server's memory and written at every minute's end (here), or
 * when the server stops. The suite stops the server gracefully (SIGTERM: it writes the counts, as in any
 * deployment) and starts it again on the same data directory: deterministic, and no wait for
 * the minute. While it is stopped, 30 days of earlier hours are added to the database, so that
 * the chart and its screenshots look as they do for a token in use.
 */
describe.skipIf(!available)('activity and token usage', () => {
  // Counts written at each minute's end (USAGE_FLUSH_SECONDS=60), not every 10 s (the default):
  // the test reads "never used" between its validations and the stop.
  const dash = useDashboard({ env: { USAGE_FLUSH_SECONDS: '60' } })
  let context: BrowserContext
  let page: Page
  const password = 'correct horse battery'
  let website = { id: '', token: '' }
  let backend = { id: '', token: '' }
  /** Validations of the website token made through the API, and when. */
  const validations = 12
  let validatedFrom = 0
  let validatedUntil = 0
  /** The hours added while the server was stopped: hour → count. */
  const history = new Map<string, number>()

  beforeAll(async () => {
    ;({ context, page } = await signedIn(dash.browser, dash.server, 'acme', password))
  })
  afterAll(async () => {
    await context?.close()
  })

  /** Creates a token in the dashboard; its id and string. */
  async function create(note: string, scopes: string[]) {
    await follow(page, 'Access tokens')
    await follow(page, 'Create a token')
    await field(page, 'Note').fill(note)
    for (const scope of scopes) await checkbox(page, scope).check()
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    const token = await field(page, 'New token').inputValue()
    await follow(page, 'Back to access tokens')
    return { id: await tokenId(page, note), token }
  }

  /** Both themes of the page: a screenshot of each, and axe on each. */
  async function inspectThemes(name: string) {
    await page.emulateMedia({ colorScheme: 'light' })
    await inspect(page, name)
    await page.emulateMedia({ colorScheme: 'dark' })
    await inspect(page, `${name}-dark`)
    await page.emulateMedia({ colorScheme: 'light' })
  }

  it('shows never used before any validation, beside a link to Activity', async () => {
    website = await create('website', ['styles:read', 'fonts:read'])
    backend = await create('backend', ['tokens:read', 'tokens:write', 'styles:read'])
    await expect(
      page.getByRole('columnheader', { name: 'Last used', exact: true }).count(),
    ).resolves.toBe(1)
    for (const note of ['Default public token', 'website', 'backend']) {
      const [cells] = await rowTexts(tokenRow(page, note))
      expect(cells?.at(-1), note).toBe('never used')
    }
    await expect(link(page, 'Activity').getAttribute('href')).resolves.toBe('/account/activity')
  })

  it('counts validations through the API; the server writes them when it stops', async () => {
    // Not in a minute's last 15 s, whose flush would write them before the reload reads them.
    const intoMinute = Date.now() % 60_000
    if (intoMinute > 45_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 100))
    validatedFrom = Date.now()
    for (let i = 0; i < validations; i++) {
      const answer = await api(dash.server, 'GET', '/tokens/v2', website.token)
      expect(answer.body.code).toBe('TokenValid')
    }
    validatedUntil = Date.now()
    // The backend acts through the API: its changes are in the activity under its id.
    const made = await api(dash.server, 'POST', '/tokens/v2/acme', backend.token, {
      note: 'made by the backend',
      scopes: ['styles:read'],
    })
    expect(made.status).toBe(200)
    await page.reload()
    const [cells] = await rowTexts(tokenRow(page, 'website'))
    expect(cells?.at(-1)).toBe('never used') // counted in memory, not yet written

    await dash.server.kill('SIGTERM')
    expect(dash.server.output()).not.toMatch(/token usage not written/)
    seedHistory(path.join(dash.server.env.DATA_DIR as string, 'tessera.db'))
    await dash.restart()
  })

  /** 30 days of a token in use, for the chart: busier by day (UTC), quieter at weekends. */
  function seedHistory(file: string) {
    const now = Math.floor(Date.now() / hourMs) * hourMs
    let seed = 7
    const random = () => {
      seed = (seed * 16_807) % 2_147_483_647
      return seed / 2_147_483_647
    }
    // From 719 hours back, not 720: the page draws from the hour 720 hours before it renders,
    // and an hour that turns between seeding and rendering must not take the oldest bar away.
    for (let t = now - 719 * hourMs; t <= now - 2 * hourMs; t += hourMs) {
      const date = new Date(t)
      const daytime = Math.max(0, Math.sin(((date.getUTCHours() - 6) / 24) * 2 * Math.PI))
      const weekend = date.getUTCDay() === 0 || date.getUTCDay() === 6 ? 0.35 : 1
      const count = Math.round((4 + 90 * daytime * weekend) * (0.6 + 0.8 * random()))
      if (count > 0) history.set(date.toISOString().slice(0, 13), count)
    }
    const db = new Database(file)
    try {
      // Added to what the server wrote when it stopped (today's row of days holds the API's).
      const upsert = (table: string) =>
        db.prepare(
          `insert into ${table} (account, at, token_id, valid) values ('acme', ?, ?, ?)
           on conflict (account, at, token_id) do update set valid = valid + excluded.valid`,
        )
      const hours = upsert('usage_hours')
      const days = upsert('usage_days')
      // Kept for the life of the process, as src/db/database.ts keeps its own: on Node 24 a
      // better-sqlite3 object that the garbage collector frees may abort the process.
      keptForever.push(db, hours, days)
      db.exec('begin')
      for (const [hour, count] of history) {
        hours.run(hour, website.id, count)
        days.run(hour.slice(0, 10), website.id, count)
      }
      // An account as old as its history: counts from before an account's creation belong to a
      // former account of the same name, and the pages leave them out.
      const created = new Date(now - 31 * 24 * hourMs).toISOString()
      db.prepare(`update accounts set created = ? where username = 'acme'`).run(created)
      db.exec('commit')
    } finally {
      db.close()
    }
  }

  it('shows the minute of the last validation in Last used, after the restart', async () => {
    // The same session: it is kept in the database, and cookies do not depend on the port.
    await visit(page, `${dash.server.url}/account`)
    expect(await heading(page)).toBe('Access tokens')
    const [cells] = await rowTexts(tokenRow(page, 'website'))
    const shown = await tokenRow(page, 'website').locator('td').last().locator('time')
    const at = Date.parse((await shown.getAttribute('datetime')) ?? '')
    expect(at).toBeGreaterThanOrEqual(Math.floor(validatedFrom / minuteMs) * minuteMs)
    expect(at).toBeLessThanOrEqual(validatedUntil)
    expect(at % minuteMs).toBe(0)
    const iso = new Date(at).toISOString()
    expect(cells?.at(-1)).toBe(`${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`)
    for (const note of ['Default public token', 'made by the backend']) {
      const [other] = await rowTexts(tokenRow(page, note))
      expect(other?.at(-1), note).toBe('never used')
    }
    // The backend's validations (the POST above) count too.
    const [used] = await rowTexts(tokenRow(page, 'backend'))
    expect(used?.at(-1)).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/)
    await inspectThemes('tokens-last-used')
  })

  /** The counts of the chart's bars, and the seeded counts of the buckets it shows. */
  async function chartOf(name: string, key: (start: string) => string) {
    const chart = page.getByRole('img', { name, exact: true })
    await expect(chart.count()).resolves.toBe(1)
    await expect(chart.getAttribute('aria-describedby')).resolves.toBe('usage-summary')
    const starts = await chart
      .locator('g')
      .evaluateAll((groups) => groups.map((g) => g.getAttribute('data-start') ?? ''))
    const shown = new Set(starts.map(key))
    let seeded = 0
    for (const [hour, count] of history) if (shown.has(key(`${hour}:00:00.000Z`))) seeded += count
    const bars = await chart.locator('rect.bar').evaluateAll((rects) =>
      rects.map((r) => ({
        count: Number(r.getAttribute('data-count')),
        height: Number(r.getAttribute('height')),
      })),
    )
    return { chart, bars, seeded, counted: bars.reduce((sum, b) => sum + b.count, 0) }
  }

  it('charts verifications by hour and by day on the token page, with a table of the figures', async () => {
    await follow(page, 'website')
    expect(pathOf(page)).toBe(`/account/tokens/${website.id}`)
    expect(await heading(page)).toBe('website')
    const hours = await chartOf('Verifications by hour and outcome, last 24 hours', (s) =>
      s.slice(0, 13),
    )
    // Only valid verifications here: one piece a bar, as high as its share of the peak.
    expect(hours.counted).toBe(hours.seeded + validations)
    const peak = Math.max(...hours.bars.map((b) => b.count))
    for (const b of hours.bars) expect(b.height).toBeCloseTo(Math.max(1, (b.count / peak) * 100), 1)
    const summary = await page.locator('#usage-summary').innerText()
    expect(summary).toBe(
      `${hours.counted.toLocaleString('en-US')} verifications in the last 24 hours, all valid.`,
    )
    // Drawn from the stylesheet: valid takes the accent colour of the theme.
    const fill = () =>
      page.evaluate<string>(`getComputedStyle(document.querySelector('rect.bar')).fill`)
    await page.emulateMedia({ colorScheme: 'light' })
    const light = await fill()
    await page.emulateMedia({ colorScheme: 'dark' })
    const dark = await fill()
    expect(light).toBe('rgb(36, 80, 201)')
    expect(dark).toBe('rgb(143, 176, 255)')
    await page.emulateMedia({ colorScheme: 'light' })
    await inspectThemes('token-usage')
    const card = page.getByRole('region', { name: 'Verifications', exact: true })
    await card.screenshot({ path: path.join(screenshotDir, 'token-usage-chart.png') })
    await page.emulateMedia({ colorScheme: 'dark' })
    await card.screenshot({ path: path.join(screenshotDir, 'token-usage-chart-dark.png') })
    await page.emulateMedia({ colorScheme: 'light' })

    // The table of the figures, for those who cannot see the chart.
    const table = page.getByRole('table', {
      name: 'Verifications by hour and outcome, last 24 hours, oldest first',
    })
    await expect(table.isVisible()).resolves.toBe(false)
    await page.getByText('Verifications by hour as a table', { exact: true }).click()
    await expect(table.isVisible()).resolves.toBe(true)
    const rows = (await rowTexts(table.getByRole('row'))).slice(1)
    expect(rows).toHaveLength(24)
    expect(rows.reduce((sum, r) => sum + Number((r.at(-1) ?? '').replaceAll(',', '')), 0)).toBe(
      hours.counted,
    )
    await inspect(page, 'token-usage-table')

    await follow(page, 'Last 30 days')
    const days = await chartOf('Verifications by day and outcome, last 30 days', (s) =>
      s.slice(0, 10),
    )
    expect(days.counted).toBe(days.seeded + validations)
    await expect(link(page, 'Last 30 days').getAttribute('aria-current')).resolves.toBe('true')
    await inspectThemes('token-usage-days')
  })

  it('says never used on the page of a token never validated', async () => {
    await follow(page, 'Access tokens')
    await follow(page, 'made by the backend')
    await expect(page.locator('#usage-summary').innerText()).resolves.toBe(
      '0 verifications in the last 24 hours.',
    )
    await expect(page.getByRole('img').count()).resolves.toBe(0)
    await inspect(page, 'token-never-used')
  })

  it('lists the events of the account on the Activity page, newest first', async () => {
    // A failed attempt and a sign-in, from this browser.
    await click(page, 'Sign out')
    expect((await signIn(page, dash.server, 'acme', 'not the password')).statuses).toEqual([401])
    expect((await signIn(page, dash.server, 'acme', password)).statuses).toEqual([303, 200])

    await follow(page, 'Activity')
    expect(pathOf(page)).toBe('/account/activity')
    expect(await heading(page)).toBe('Activity')
    await expect(link(page, 'Activity').getAttribute('aria-current')).resolves.toBe('page')
    const table = page.getByRole('table', { name: 'Events of your account, newest first' })
    // The stylesheet shows them in capitals; their names are as written.
    const header = table.getByRole('columnheader')
    await expect(header.evaluateAll((cells) => cells.map((c) => c.textContent))).resolves.toEqual([
      'Time',
      'Event',
      'By',
      'Target',
      'Address',
      'Request id',
    ])
    const rows = (await rowTexts(table.getByRole('row')))
      .slice(1)
      .map((cells) => cells.map((cell) => cell.replaceAll('\u00a0', ' ')))
    const short = (id: string) => `${id.slice(0, 8)}…`
    expect(rows.map((cells) => cells.slice(1, 5))).toEqual([
      ['Signed in', 'acme (password)', 'Your account', '127.0.0.1'],
      ['Sign-in failed', 'Sign-in page', 'Your account', '127.0.0.1'],
      ['Signed out', 'acme (password)', 'A dashboard session', '127.0.0.1'],
      [
        'Token created\npk · styles:read',
        `API token ${short(backend.id)} (sk)`,
        expect.stringMatching(/^made by the backend c[a-z0-9]{7}…$/),
        '127.0.0.1',
      ],
      [
        'Token created\nsk · styles:read, tokens:read, tokens:write',
        'acme (password)',
        `backend ${short(backend.id)}`,
        '127.0.0.1',
      ],
      [
        'Token created\npk · styles:read, fonts:read',
        'acme (password)',
        `website ${short(website.id)}`,
        '127.0.0.1',
      ],
      ['Password set', 'acme (setup link)', 'Your account', '127.0.0.1'],
      ['Setup link issued', 'Command line', 'Your account', 'none'],
      [
        expect.stringMatching(/^Account created\nPlan \w+$/),
        'Command line',
        'Your account',
        'none',
      ],
    ])
    for (const cells of rows) expect(cells[0]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/)
    for (const cells of rows.slice(0, 7)) expect(cells[5]).toMatch(/^[a-z0-9]{8}-[0-9a-z]+$/)
    // Found by their accessible names, as a screen reader user would.
    await expect(
      table.getByRole('rowheader', { name: 'Sign-in failed', exact: true }).count(),
    ).resolves.toBe(1)
    const created = table.getByRole('rowheader', { name: /^Token created/ })
    await expect(created.count()).resolves.toBe(3)
    await expect(table.getByRole('link', { name: 'website', exact: true }).count()).resolves.toBe(1)
    const content = await page.content()
    for (const secret of [website.token, backend.token, password]) {
      expect(content).not.toContain(secret)
    }
    await inspectThemes('activity')

    // The target of an event links to the token's page.
    await follow(page, 'backend')
    expect(pathOf(page)).toBe(`/account/tokens/${backend.id}`)
    expect(await bodyText(page)).toContain('1 verification in the last 24 hours, all valid.')
  })

  it('lays the Activity page out for a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    await visit(page, `${dash.server.url}/account/activity`)
    expect(await heading(page)).toBe('Activity')
    await inspect(page, 'activity-phone')
    await visit(page, `${dash.server.url}/account/tokens/${website.id}`)
    await inspect(page, 'token-usage-phone')
    await page.setViewportSize({ width: 1280, height: 720 })
  })
})
