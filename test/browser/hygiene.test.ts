import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  button,
  checkbox,
  click,
  createAccount,
  field,
  follow,
  formOf,
  heading,
  inspect,
  link,
  newContext,
  pathOf,
  postForm,
  retrieveCode,
  screenshotDir,
  setPassword,
  tokenRow,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const dayMs = 86_400_000
const password = 'correct horse battery'

/** The default catalog with a plan policy on `pro`: at most 90 days for an sk. */
function catalogWithPlanPolicy(): string {
  const file = path.resolve(import.meta.dirname, '../../catalog/default.yaml')
  const text = readFileSync(file, 'utf8').replace(
    'scopes: [*standard, user:write, analytics:read]',
    'scopes: [*standard, user:write, analytics:read]\n    policy: { maxSkLifetimeDays: 90 }',
  )
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'tessera-catalog-')), 'catalog.yaml')
  writeFileSync(out, text)
  return out
}

/** An instant as the `Expires at` field takes it: UTC, to the minute. */
const fieldValue = (ms: number) => new Date(ms).toISOString().slice(0, 16)
/** An instant as the pages name its day: "3 Dec 2026". */
const dayText = (ms: number) =>
  new Intl.DateTimeFormat('en-GB', {
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    timeZone: 'UTC',
  }).format(ms)

const attention = (page: Page) => page.getByRole('region', { name: 'Needs attention' })
const noticeTexts = (region: Locator) =>
  region
    .getByRole('listitem')
    .evaluateAll((items) => items.map((i) => (i as unknown as { innerText: string }).innerText))
/** The accessible names of the buttons and links of the notices region. */
const actionNames = async (region: Locator) => {
  const names: string[] = []
  for (const role of ['button', 'link'] as const) {
    for (const el of await region.getByRole(role).all()) {
      const label = await el.getAttribute('aria-label')
      if (label !== null) names.push(label)
    }
  }
  return names.sort()
}

/**
 * Token hygiene in the dashboard: an end of life set on the forms and shown on the pages, the
 * "Needs attention" notices of the tokens and settings pages with their actions, Extend, the
 * owner's token policy and a create it refuses; axe in the light and the dark theme.
 */
describe.skipIf(!available)('token hygiene in the dashboard', () => {
  const dash = useDashboard({ env: { SCOPES_FILE: catalogWithPlanPolicy() } })
  let context: BrowserContext
  let page: Page
  const deployEnd = Date.now() + 3 * dayMs
  const widgetEnd = Date.now() + 5 * dayMs

  beforeAll(async () => {
    const account = await createAccount(dash.server, 'hygiene', '--plan', 'pro')
    context = await newContext(dash.browser)
    page = await context.newPage()
    const set = await setPassword(page, dash.server, account.setupUrl, password)
    expect(set.statuses).toEqual([303, 200])
  })
  afterAll(async () => {
    await context?.close()
  })

  async function inspectThemes(name: string) {
    await page.emulateMedia({ colorScheme: 'light' })
    await inspect(page, name)
    await page.emulateMedia({ colorScheme: 'dark' })
    await inspect(page, `${name}-dark`)
    await page.emulateMedia({ colorScheme: 'light' })
  }

  /** A person joins the account with an invitation link made by the CLI. */
  async function join(login: string, role: string) {
    const made = await tessera(
      dash.server.env,
      'member',
      'add',
      'hygiene',
      `${login}@x.example`,
      '--role',
      role,
    )
    const joined = await newContext(dash.browser)
    const their = await joined.newPage()
    await visit(their, dash.server.url + new URL(made.invitationUrl).pathname)
    await field(their, 'Username').fill(login)
    await field(their, 'New password').fill(password)
    await field(their, 'Confirm password').fill(password)
    expect((await click(their, await heading(their))).statuses).toEqual([303, 200])
    return { context: joined, page: their }
  }

  it('sets an end of life on the new token form, and shows it in the list and on its page', async () => {
    await follow(page, 'Create a token')
    await field(page, 'Note').fill('deploy')
    await checkbox(page, 'tokens:write').check()
    await field(page, 'Expires at').fill(fieldValue(deployEnd))
    expect(await field(page, 'Expires at').getAttribute('type')).toBe('datetime-local')
    const hint = await page.locator('#expires-at-hint').innerText()
    expect(hint).toContain('UTC')
    expect(hint).toContain('Empty: it never expires.')
    await inspect(page, 'new-token-expires')
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    const sk = await field(page, 'New token').inputValue()
    expect(await retrieveCode(dash.server, sk)).toBe('TokenValid')

    await follow(page, 'Token settings')
    expect(await field(page, 'Expires at').inputValue()).toBe(fieldValue(deployEnd))
    const facts = await page.locator('dl.facts').first().innerText()
    expect(facts).toContain(`Expires\n${dayText(deployEnd)}`)
    expect(facts).toContain('(in 3 days)')

    // Saved unchanged, the end stays as it was (to the millisecond: the audit names no field).
    await field(page, 'Note').fill('deploy')
    expect((await click(page, 'Save changes')).statuses).toEqual([303, 200])
    expect(await field(page, 'Expires at').inputValue()).toBe(fieldValue(deployEnd))
    // The plan allows an sk 90 days at most: its end may not be removed.
    await field(page, 'Expires at').fill('')
    expect((await click(page, 'Save changes')).statuses).toEqual([422])
    expect(await page.getByRole('alert').innerText()).toContain(
      'Your account’s token policy requires a secret token to end within 90 days: Expires at may not be removed.',
    )
    await field(page, 'Expires at').fill(fieldValue(deployEnd))
    expect((await click(page, 'Save changes')).statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Changes saved')
    await inspectThemes('token-expires')
    await page.screenshot({ path: path.join(screenshotDir, 'doc-token-expires.png') })
    // The field and its hint, for the docs.
    const top = await page.getByText('Expires at', { exact: true }).boundingBox()
    const end = await button(page, 'Save changes').boundingBox()
    if (top && end) {
      const height = end.y + end.height - top.y + 32
      await page.screenshot({
        path: path.join(screenshotDir, 'doc-token-expires-field.png'),
        fullPage: true,
        clip: { x: top.x - 24, y: top.y - 16, width: 800, height },
      })
    }

    const updates = await tessera(dash.server.env, 'audit', 'hygiene', '--action', 'token.updated')
    expect(updates.map((e: { details: { fields: string[] } }) => e.details.fields)).toEqual([
      [],
      [],
    ])

    // A public token ends sooner; emptied, a public token never expires (the policy is for sk).
    await follow(page, 'Access tokens')
    await follow(page, 'Create a token')
    await field(page, 'Note').fill('widget')
    await checkbox(page, 'styles:read').check()
    await field(page, 'Expires at').fill(fieldValue(widgetEnd))
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    await follow(page, 'Token settings')
    await field(page, 'Expires at').fill('')
    expect((await click(page, 'Save changes')).statuses).toEqual([303, 200])
    expect(await page.locator('dl.facts').first().innerText()).toContain('Expires\nnever')
    await field(page, 'Expires at').fill(fieldValue(widgetEnd))
    expect((await click(page, 'Save changes')).statuses).toEqual([303, 200])

    await follow(page, 'Access tokens')
    expect(await tokenRow(page, 'deploy').innerText()).toContain(`Expires ${dayText(deployEnd)}`)
    expect(await tokenRow(page, 'widget').innerText()).toContain(`Expires ${dayText(widgetEnd)}`)
    expect(await tokenRow(page, 'Default public token').innerText()).not.toContain('Expires')
  })

  it('lists an expiring and a rolled token under "Needs attention" on the tokens and settings pages', async () => {
    // A public token rolled with an hour's grace: its old string retires.
    await follow(page, 'Create a token')
    await field(page, 'Note').fill('website')
    await checkbox(page, 'styles:read').check()
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    await follow(page, 'Token settings')
    await field(page, 'The old token stops working').selectOption('1h')
    expect((await click(page, 'Roll token')).statuses).toEqual([200])

    for (const where of ['/account', '/account/settings']) {
      await visit(page, `${dash.server.url}${where}`)
      const region = attention(page)
      const items = await noticeTexts(region)
      expect(items, where).toHaveLength(3)
      expect(items[0]).toMatch(
        /^website old string pk was rolled: it stops working .+ \(in (59|60) minutes\)/,
      )
      expect(items[1]).toContain(`deploy sk expires ${dayText(deployEnd)} (in 3 days)`)
      expect(items[2]).toContain(`widget pk expires ${dayText(widgetEnd)} (in 5 days)`)
      expect(await actionNames(region), where).toEqual([
        'Delete deploy',
        'Delete the old string of website',
        'Delete widget',
        'Extend deploy',
        'Extend widget',
      ])
      await inspectThemes(where === '/account' ? 'notices' : 'settings-notices')
    }
    await visit(page, `${dash.server.url}/account`)
    const rolled = page.getByRole('row').filter({ hasText: 'Rolled: stops working' })
    expect(await rolled.count()).toBe(1)
    expect(await rolled.innerText()).toContain('website')
    await page.screenshot({ path: path.join(screenshotDir, 'doc-notices.png') })
    // Delete leads to the confirmation of the existing flow.
    await visit(page, `${dash.server.url}/account`)
    await link(attention(page), 'Delete the old string of website').click()
    await page.waitForURL(/\/delete$/)
    expect(await heading(page)).toBe('Delete this token?')
  })

  it("extends an expiring sk to the policy's longest life, a pk by 30 days", async () => {
    const ends = (days: number, from: number) => [
      dayText(from + days * dayMs),
      dayText(Date.now() + days * dayMs),
    ]
    await visit(page, `${dash.server.url}/account`)
    let before = Date.now()
    expect((await click(page, 'Extend deploy')).statuses).toEqual([303, 200])
    expect(pathOf(page)).toBe('/account')
    expect(await bodyText(page)).toContain('Token extended.')
    const deployRow = await tokenRow(page, 'deploy').innerText()
    expect(ends(90, before).some((d) => deployRow.includes(`Expires ${d}`))).toBe(true)

    // From the settings page, back to it.
    await follow(page, 'Settings')
    before = Date.now()
    expect((await click(page, 'Extend widget')).statuses).toEqual([303, 200])
    expect(pathOf(page)).toBe('/account/settings')
    expect(await bodyText(page)).toContain('Token extended')
    const items = await noticeTexts(attention(page))
    expect(items).toHaveLength(1)
    expect(items[0]).toContain('website')
    await follow(page, 'Access tokens')
    const widgetRow = await tokenRow(page, 'widget').innerText()
    expect(ends(30, before).some((d) => widgetRow.includes(`Expires ${d}`))).toBe(true)
    await follow(page, 'widget')
    expect(await page.locator('dl.facts').first().innerText()).toContain('(in 30 days)')
    const list = await tessera(dash.server.env, 'audit', 'hygiene', '--action', 'token.updated')
    expect(list[0].details.fields).toEqual(['expiresAt'])
    expect(list[1].details.fields).toEqual(['expiresAt'])
  })

  it('shows the notices to a viewer without their actions; the policy form to owners only', async () => {
    const viewer = await join('vera', 'viewer')
    const dev = await join('devon', 'developer')
    try {
      for (const where of ['/account', '/account/settings']) {
        await visit(viewer.page, `${dash.server.url}${where}`)
        const region = attention(viewer.page)
        expect(await noticeTexts(region)).toHaveLength(1)
        expect(await region.getByRole('button').count()).toBe(0)
        expect(await region.getByRole('link').allInnerTexts()).toEqual(['website'])
        expect(await region.locator('form').count()).toBe(0)
      }
      await inspect(viewer.page, 'viewer-settings-policy')
      const section = viewer.page.getByRole('region', { name: 'Token policy' })
      expect(await section.innerText()).toContain('Owners of the account change its token policy.')
      expect(await button(viewer.page, 'Save token policy').count()).toBe(0)

      // A developer extends and deletes tokens, but changes no policy, even by a forged form.
      await visit(dev.page, `${dash.server.url}/account/settings`)
      expect(await actionNames(attention(dev.page))).toEqual(['Delete the old string of website'])
      expect(await button(dev.page, 'Save token policy').count()).toBe(0)
      const csrf = (await formOf(button(dev.page, 'Sign out everywhere'))).fields.find(
        ([k]) => k === '_csrf',
      ) as [string, string]
      const forged = await postForm(
        dev.context,
        `${dash.server.url}/account/settings/token-policy`,
        [csrf, ['maxSkLifetimeDays', '1']],
        { origin: dash.server.url },
      )
      expect(forged.status()).toBe(403)
      expect(await forged.text()).toContain('this needs an owner')
      const changes = await tessera(
        dash.server.env,
        'audit',
        'hygiene',
        '--action',
        'token_policy.changed',
      )
      expect(changes).toEqual([])
    } finally {
      await viewer.context.close()
      await dev.context.close()
    }
  })

  it('an owner sets the token policy within the plan; a create that breaks it is refused next to the form', async () => {
    await follow(page, 'Settings')
    const section = page.getByRole('region', { name: 'Token policy' })
    expect(await section.innerText()).toContain('Your plan sets at most 90 days')
    expect(await section.innerText()).toContain('must expire within 90 days')

    // Looser than the plan: refused next to the form, what was typed kept.
    await field(page, 'Maximum sk lifetime (days)').fill('120')
    const loose = await click(page, 'Save token policy')
    expect(loose.statuses).toEqual([422])
    expect(await section.getByRole('alert').innerText()).toContain(
      'The plan sets Maximum sk lifetime (days) to 90 days: at most that',
    )
    expect(await field(page, 'Maximum sk lifetime (days)').inputValue()).toBe('120')
    await field(page, 'Maximum sk lifetime (days)').fill('30')
    await field(page, 'Delete tokens unused for (days)').fill('3')
    expect((await click(page, 'Save token policy')).statuses).toEqual([422])
    expect(await section.getByRole('alert').innerText()).toBe(
      'The token policy was not saved.\n\nDelete tokens unused for (days) must be a whole number from 8 to 3650.',
    )
    await inspect(page, 'token-policy-refused')

    await field(page, 'Maximum sk lifetime (days)').fill('30')
    await checkbox(page, 'Public tokens must have allowed URLs').check()
    await field(page, 'Delete tokens unused for (days)').fill('')
    await field(page, 'Longest grace after a roll (hours)').fill('1')
    expect((await click(page, 'Save token policy')).statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Token policy saved')
    const text = await section.innerText()
    expect(text).toContain('must expire within 30 days')
    expect(text).toContain('must have allowed URLs')
    expect(text).toContain('the old string works at most 1 hour')
    expect(await field(page, 'Maximum sk lifetime (days)').inputValue()).toBe('30')
    await inspectThemes('token-policy')
    await section.screenshot({ path: path.join(screenshotDir, 'doc-token-policy.png') })
    const changes = await tessera(
      dash.server.env,
      'audit',
      'hygiene',
      '--action',
      'token_policy.changed',
    )
    expect(changes).toHaveLength(1)

    // A secret token without an end: refused, with the policy's sentence, the form as typed.
    await follow(page, 'Access tokens')
    await follow(page, 'Create a token')
    expect(await page.locator('#expires-at-hint').innerText()).toContain(
      'Your account’s token policy: a secret token must expire within 30 days.',
    )
    expect(await page.locator('#urls-hint').innerText()).toContain(
      'Your account’s token policy: a public token needs at least one.',
    )
    await field(page, 'Note').fill('forever')
    await checkbox(page, 'tokens:read').check()
    const refused = await click(page, 'Create token')
    expect(refused.statuses).toEqual([422])
    expect(await page.getByRole('alert').innerText()).toContain(
      'Your account’s token policy requires a secret token to end within 30 days: set Expires at.',
    )
    expect(await field(page, 'Note').inputValue()).toBe('forever')
    expect(await checkbox(page, 'tokens:read').isChecked()).toBe(true)
    await inspect(page, 'new-token-policy-refused')
    await field(page, 'Expires at').fill(fieldValue(Date.now() + 10 * dayMs))
    expect((await click(page, 'Create token')).statuses).toEqual([200])

    // A roll offers no more grace than the policy allows.
    await follow(page, 'Token settings')
    const options = await field(page, 'The old token stops working')
      .locator('option')
      .allInnerTexts()
    expect(options).toEqual(['now', 'in 1 hour'])
  })
})
