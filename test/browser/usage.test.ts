import { readFileSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { browserAvailable } from './browser.js'
import {
  alertText,
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
  tokenId,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const hourMs = 3_600_000
const adminSecret = 'usage-admin-0123456789abcdefghijklmnopqrstuvwxyz'
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
/** better-sqlite3 objects this file made: kept, as src/db/database.ts keeps its own (Node 24). */
const keptForever: unknown[] = []

/**
 * The Usage page as a holder sees it: verifications through the API counted by outcome, with 30
 * days of history added while the server was stopped (so that the charts and their screenshots
 * look as they do for an account in use), the CSV download against the admin API's totals, the
 * account's credits set by the operator (read-only on the page, for the owner too), and a
 * token's own credits set by the owner on its page; axe in both themes.
 */
describe.skipIf(!available)('the Usage page', () => {
  const dash = useDashboard({ env: { ADMIN_KEYS: `ops:${adminSecret}` } })
  let context: BrowserContext
  let page: Page
  const tokens = { website: '', backend: '', old: '' }

  beforeAll(async () => {
    ;({ context, page } = await signedIn(dash.browser, dash.server, 'acme'))
  })
  afterAll(async () => {
    await context?.close()
  })

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

  async function inspectThemes(name: string) {
    await page.emulateMedia({ colorScheme: 'light' })
    await inspect(page, name)
    await page.emulateMedia({ colorScheme: 'dark' })
    await inspect(page, `${name}-dark`)
    await page.emulateMedia({ colorScheme: 'light' })
  }

  it('counts verifications through the API by outcome; the server writes them when it stops', async () => {
    const website = await create('website', ['styles:read', 'fonts:read'])
    const backend = await create('backend', ['tokens:read', 'tokens:write', 'styles:read'])
    tokens.website = website.id
    tokens.backend = backend.id
    for (let i = 0; i < 5; i++) {
      expect((await api(dash.server, 'GET', '/tokens/v2', website.token)).body.code).toBe(
        'TokenValid',
      )
    }
    const expires = new Date(Date.now() + 30 * 60_000).toISOString()
    const tk = await api(dash.server, 'POST', '/tokens/v2/acme', backend.token, {
      expires,
      scopes: ['styles:read'],
    })
    expect(tk.status).toBe(200)
    for (let i = 0; i < 3; i++) await api(dash.server, 'GET', '/tokens/v2', tk.body.token)
    const old = await api(dash.server, 'POST', '/tokens/v2/acme', backend.token, { note: 'old' })
    tokens.old = old.body.id
    await api(dash.server, 'DELETE', `/tokens/v2/acme/${tokens.old}`, backend.token)
    const revoked = await api(dash.server, 'GET', '/tokens/v2', old.body.token)
    expect(revoked.body.code).toBe('TokenRevoked')
    await dash.server.kill('SIGTERM')
    seedHistory(path.join(dash.server.env.DATA_DIR as string, 'tessera.db'))
    await dash.restart()
  })

  /** 30 days of an account in use: busier by day (UTC), refusals here and there. */
  function seedHistory(file: string) {
    const now = Math.floor(Date.now() / hourMs) * hourMs
    let seed = 11
    const random = () => {
      seed = (seed * 16_807) % 2_147_483_647
      return seed / 2_147_483_647
    }
    const rows: [string, string, number[]][] = []
    for (let t = now - 719 * hourMs; t <= now - 2 * hourMs; t += hourMs) {
      const date = new Date(t)
      const hour = date.toISOString().slice(0, 13)
      const daytime = Math.max(0, Math.sin(((date.getUTCHours() - 6) / 24) * 2 * Math.PI))
      const weekend = date.getUTCDay() === 0 || date.getUTCDay() === 6 ? 0.4 : 1
      const busy = (4 + 120 * daytime * weekend) * (0.6 + 0.8 * random())
      const some = (share: number) => (random() < share ? Math.round(busy * 0.08 * random()) : 0)
      // website: valid, now and then a page on a host it is not allowed on.
      rows.push([hour, tokens.website, [Math.round(busy), 0, 0, 0, 0, 0, some(0.2), 0, 0, 0]])
      // backend: valid, rate limited in its busiest hours, a missing scope once in a while.
      const limited = daytime > 0.85 && random() < 0.5 ? Math.round(busy * 0.3) : 0
      rows.push([
        hour,
        tokens.backend,
        [Math.round(busy * 0.6), 0, 0, 0, 0, limited, 0, 0, some(0.05), 0],
      ])
      // The deleted token, still tried; temporary tokens, some used after they expired.
      rows.push([hour, tokens.old, [0, 0, 0, 0, some(0.3), 0, 0, 0, 0, 0]])
      rows.push([hour, '', [Math.round(busy * 0.15), 0, 0, some(0.3), 0, 0, 0, 0, 0, 0]])
    }
    const db = new Database(file)
    try {
      const columns = outcomes.join(', ')
      const adds = outcomes.map((o) => `${o} = ${o} + excluded.${o}`).join(', ')
      const upsert = (table: string) =>
        db.prepare(
          `insert into ${table} (account, at, token_id, ${columns}) values ('acme', ?, ?, ${outcomes.map(() => '?').join(', ')})
           on conflict (account, at, token_id) do update set ${adds}`,
        )
      const hours = upsert('usage_hours')
      const days = upsert('usage_days')
      keptForever.push(db, hours, days)
      db.exec('begin')
      for (const [hour, token, counts] of rows) {
        if (counts.every((n) => n === 0)) continue
        hours.run(hour, token, ...counts)
        days.run(hour.slice(0, 10), token, ...counts)
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

  /** The admin API's answer for the account over [from, to) at `resolution`. */
  async function adminUsage(from: string, to: string, resolution: 'hour' | 'day') {
    const url = `${dash.server.url}/admin/v1/accounts/acme/usage?from=${from}&to=${to}&resolution=${resolution}`
    const answer = await context.request.get(url, {
      headers: { authorization: `Bearer ${adminSecret}` },
    })
    expect(answer.status()).toBe(200)
    return (await answer.json()) as { totals: Record<string, number> }
  }

  /** The CSV the `Download CSV` link gives, as the browser saves it. */
  async function download() {
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      link(page, 'Download CSV').click(),
    ])
    const saved = await file.path()
    return { name: file.suggestedFilename(), text: readFileSync(saved, 'utf8') }
  }

  /** Per column, the CSV's rows added up (zeros left out, as the admin API does). */
  const columnSums = (csv: string) => {
    const sums: Record<string, number> = {}
    for (const line of csv.trim().split('\r\n').slice(1)) {
      for (const [i, n] of line.split(',').slice(1).entries()) {
        const name = outcomes[i] as string
        if (Number(n) > 0) sums[name] = (sums[name] ?? 0) + Number(n)
      }
    }
    return sums
  }

  /** The chart, the table and the CSV of the period shown agree with the admin API. */
  async function expectPeriodAgrees(resolution: 'hour' | 'day', buckets: number) {
    const csv = await download()
    const lines = csv.text.trim().split('\r\n')
    expect(lines[0]).toBe(`start,${outcomes.join(',')}`)
    expect(lines).toHaveLength(buckets + 1)
    const from = (lines[1] ?? '').split(',')[0] as string
    const width = resolution === 'hour' ? hourMs : 24 * hourMs
    const to = new Date(Date.parse(from) + buckets * width).toISOString()
    const at = resolution === 'hour' ? `${from.slice(0, 13)}00Z` : from.slice(0, 10)
    expect(csv.name).toBe(`usage-acme-${at}.csv`)
    const totals = (await adminUsage(from, to, resolution)).totals
    expect(columnSums(csv.text)).toEqual(totals)
    // The chart's pieces add up to the same, bucket by bucket.
    const chart = page.getByRole('img', { name: /^Verifications by (hour|day) and outcome, last/ })
    const drawn = await chart
      .locator('rect.bar')
      .evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-count'))))
    const all = Object.values(totals).reduce((a, b) => a + b, 0)
    expect(drawn.reduce((a, b) => a + b, 0)).toBe(all)
    const firstBar = await chart.locator('g').first().getAttribute('data-start')
    expect(firstBar).toBe(from)
    return totals
  }

  /** The account's credits as the operator sets them: the admin API (no dashboard route). */
  async function setAccountCredits(body: unknown) {
    const answer = await context.request.put(`${dash.server.url}/admin/v1/accounts/acme/credits`, {
      headers: { authorization: `Bearer ${adminSecret}` },
      data: body,
    })
    expect(answer.status()).toBe(200)
  }

  it("shows the account's credits, which the operator sets, to the owner read-only", async () => {
    await visit(page, `${dash.server.url}/account/usage`)
    const card = page.getByRole('region', { name: 'Credits', exact: true })
    await expect(card.getByText('No credit limit', { exact: true }).count()).resolves.toBe(1)
    await expect(
      card.getByText('Your provider sets the account’s credits.', { exact: true }).count(),
    ).resolves.toBe(1)
    await setAccountCredits({
      remaining: 10_000,
      refill: { interval: 'monthly', amount: 10_000, day: 1 },
    })
    await visit(page, `${dash.server.url}/account/usage`)
    const facts = await card.locator('dl').innerText()
    expect(facts).toMatch(
      /^Remaining\s+10,000 of 10,000\s+Refill\s+set to 10,000 every month on day 1 at 00:00 UTC; next \d{4}-\d\d-01 00:00 UTC\s+Since\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
    )
    await expect(
      card.getByText('Your provider sets the account’s credits.', { exact: true }).count(),
    ).resolves.toBe(1)
    // Read-only for the owner too: no form, no field, no button.
    await expect(card.locator('form, input, select, button').count()).resolves.toBe(0)
    await expect(page.getByRole('button', { name: 'Save credits' }).count()).resolves.toBe(0)
    await expect(page.getByRole('button', { name: 'Remove credit limit' }).count()).resolves.toBe(0)
    await inspectThemes('usage-credits')
  })

  it('charts the last 24 hours by outcome, lists the tokens, and downloads the same figures', async () => {
    await visit(page, `${dash.server.url}/account`)
    await follow(page, 'Usage')
    expect(pathOf(page)).toBe('/account/usage')
    expect(await heading(page)).toBe('Usage')
    await expect(link(page, 'Usage').getAttribute('aria-current')).resolves.toBe('page')
    await expect(link(page, 'Last 24 hours').getAttribute('aria-current')).resolves.toBe('true')
    const totals = await expectPeriodAgrees('hour', 24)
    expect(totals.revoked).toBeGreaterThanOrEqual(1)
    const legend = await page.locator('ul.legend li').allInnerTexts()
    expect(legend[0]).toMatch(/^Valid\s+[\d,]+$/)

    const used = page.getByRole('table', { name: 'The most used tokens, last 24 hours' })
    const usedRows = (await rowTexts(used.getByRole('row'))).slice(1)
    expect(usedRows.map((r) => r[0])).toEqual(
      expect.arrayContaining(['website', 'backend', 'Temporary tokens']),
    )
    await expect(link(used, 'website').getAttribute('href')).resolves.toBe(
      `/account/tokens/${tokens.website}`,
    )
    const refused = page.getByRole('table', { name: 'The most refused tokens, last 24 hours' })
    const refusedRows = (await rowTexts(refused.getByRole('row'))).slice(1)
    expect(refusedRows.map((r) => r[0])).toContain(`Deleted token ${tokens.old}`)

    // The figures as a table, for those who cannot see the chart.
    await page.getByText('Verifications by hour as a table', { exact: true }).click()
    const table = page.getByRole('table', {
      name: 'Verifications by hour and outcome, last 24 hours, oldest first',
    })
    await expect(table.getByRole('row').count()).resolves.toBe(25)
    await page.getByText('Verifications by hour as a table', { exact: true }).click()

    await inspectThemes('usage')
    const card = page.getByRole('region', { name: 'Verifications', exact: true })
    await card.screenshot({ path: path.join(screenshotDir, 'usage-chart.png') })
    await page.emulateMedia({ colorScheme: 'dark' })
    await card.screenshot({ path: path.join(screenshotDir, 'usage-chart-dark.png') })
    await page.emulateMedia({ colorScheme: 'light' })
  })

  it('charts the last 30 days by day', async () => {
    await follow(page, 'Last 30 days')
    expect(new URL(page.url()).search).toBe('?period=30d')
    await expect(link(page, 'Last 30 days').getAttribute('aria-current')).resolves.toBe('true')
    await expectPeriodAgrees('day', 30)
    await inspectThemes('usage-days')
  })

  it("sets a token's own credits on its page, beside its own chart", async () => {
    await follow(page, 'Access tokens')
    await follow(page, 'backend')
    expect(await heading(page)).toBe('backend')
    await expect(
      page.getByRole('img', { name: 'Verifications by hour and outcome, last 24 hours' }).count(),
    ).resolves.toBe(1)
    await field(page, 'Credits remaining').fill('2.5')
    expect((await click(page, 'Save credits')).statuses).toEqual([422])
    expect(await alertText(page)).toBe('Credits remaining must be a whole number, 0 or more.')
    await expect(field(page, 'Credits remaining').inputValue()).resolves.toBe('2.5')
    expect(await heading(page)).toBe('backend')
    await inspect(page, 'token-credits-error')
    await field(page, 'Credits remaining').fill('500')
    await field(page, 'Refill').selectOption({ label: 'Daily' })
    await field(page, 'Refill amount').fill('500')
    expect((await click(page, 'Save credits')).statuses).toEqual([303, 200])
    expect(pathOf(page)).toBe(`/account/tokens/${tokens.backend}`)
    const facts = await page.locator('section.credits dl').innerText()
    expect(facts).toMatch(
      /^Remaining\s+500 of 500\s+Refill\s+set to 500 every day at 00:00 UTC; next/,
    )
    await inspectThemes('token-credits')
    // The top of the page, down to its credits: the token page of the docs.
    const credits = await page.locator('section.credits').boundingBox()
    const height = Math.ceil((credits?.y ?? 0) + (credits?.height ?? 0) + 24)
    await page.screenshot({
      path: path.join(screenshotDir, 'token-top.png'),
      fullPage: true,
      clip: { x: 0, y: 0, width: 1280, height },
    })
    expect((await click(page, 'Remove credit limit')).statuses).toEqual([303, 200])
    await expect(page.getByText('No credit limit', { exact: true }).count()).resolves.toBe(1)
  })

  it('lays the Usage page out for a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    await visit(page, `${dash.server.url}/account/usage`)
    expect(await heading(page)).toBe('Usage')
    await inspect(page, 'usage-phone')
    await page.setViewportSize({ width: 1280, height: 720 })
  })
})
