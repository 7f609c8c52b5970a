import path from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  button,
  checkbox,
  click,
  field,
  follow,
  formOf,
  heading,
  inspect,
  link,
  pathOf,
  postForm,
  screenshotDir,
  signedIn,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const dayMs = 86_400_000

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

interface Described {
  getAttribute(name: string): string | null
  ownerDocument: { getElementById(id: string): { textContent: string | null } | null }
}
/** What a screen reader reads after a control's name: the texts its aria-describedby names. */
const description = (control: Locator) =>
  control.evaluate((el: Described) =>
    (el.getAttribute('aria-describedby') ?? '')
      .split(/\s+/)
      .filter((id) => id !== '')
      .map((id) => el.ownerDocument.getElementById(id)?.textContent?.trim() ?? '')
      .join(' '),
  )
/** The headline of the page's alert: its first strong text. */
const headline = async (page: Page) =>
  (await page.getByRole('alert').locator('strong').first().innerText()).trim()
/** The links of the alert's list of fields to put right. */
const summaryLinks = (page: Page) => page.getByRole('alert').getByRole('link').allInnerTexts()
/** The id of the element that has the focus. */
const focused = (page: Page) => page.evaluate('document.activeElement && document.activeElement.id')

/**
 * axe and a screenshot at desktop width (light and dark), then at a phone's, with nothing wider
 * than the phone.
 */
async function bothWidths(page: Page, name: string) {
  await inspect(page, name)
  await page.emulateMedia({ colorScheme: 'dark' })
  await inspect(page, `${name}-dark`)
  await page.emulateMedia({ colorScheme: 'light' })
  await page.setViewportSize({ width: 390, height: 844 })
  try {
    await inspect(page, `${name}-phone`)
    const wide = await page.evaluate('document.documentElement.scrollWidth')
    expect(wide, `${name} at 390 px`).toBeLessThanOrEqual(390)
  } finally {
    await page.setViewportSize({ width: 1280, height: 720 })
  }
}

/** A screenshot for the docs: from the top of `from` to the bottom of `to`, `width` wide. */
async function clip(page: Page, name: string, from: Locator, to: Locator, width = 1280) {
  const top = await from.boundingBox()
  const end = await to.boundingBox()
  if (top === null || end === null) throw new Error(`${name}: nothing to clip`)
  const x = width === 1280 ? 0 : Math.max(0, top.x - 24)
  const y = Math.max(0, top.y - 12)
  const height = end.y + end.height + 24 - y
  await page.screenshot({
    path: path.join(screenshotDir, `${name}.png`),
    fullPage: true,
    clip: { x, y, width, height },
  })
}

const attention = (page: Page) => page.getByRole('region', { name: 'Needs attention' })
const noticeTexts = (region: Locator) =>
  region
    .getByRole('listitem')
    .evaluateAll((items) => items.map((i) => (i as unknown as { innerText: string }).innerText))
/** The accessible names of the buttons and links of a region that carry one of their own. */
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
 * Issue 45, items 5, 7 and 8 as a newcomer meets them: the new-token form sent untouched, a
 * token policy's refusal, and "Needs attention" after a roll.
 */
describe.skipIf(!available)('the first hour with the token forms and notices', () => {
  const dash = useDashboard()

  /** An sk of the account made with the CLI, to read what the API sees. */
  const reader = async (username: string) =>
    (
      await tessera(
        dash.server.env,
        'token',
        'create',
        username,
        '--scopes',
        'tokens:read,tokens:write,styles:read',
        '--note',
        'reader',
      )
    ).token as string
  const listed = async (username: string, token: string) =>
    (await api(dash.server, 'GET', `/tokens/v2/${username}`, token)).body as {
      id: string
      note: string
      scopes: string[]
      expiresAt?: string
    }[]

  it('an untouched "Create token" form makes no token: it asks for a note and a scope at their fields', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'newcomer')
    const sk = await reader('newcomer')
    const before = await listed('newcomer', sk)
    await follow(page, 'Create a token')
    expect(await field(page, 'Note').getAttribute('required')).toBe('')
    expect(await description(field(page, 'Note'))).toBe(
      'Required: what the token is for, so that you recognise it later.',
    )
    expect(await page.locator('#scopes-hint').innerText()).toBe(
      'Choose at least one scope: a token may do only what its scopes allow.',
    )

    const untouched = await click(page, 'Create token')
    expect(untouched.statuses).toEqual([422])
    expect(await heading(page)).toBe('Create a token')
    expect(await headline(page)).toBe('The token was not created.')
    expect(await summaryLinks(page)).toEqual([
      'Enter a note: what the token is for, so that you recognise it later.',
      'Choose at least one scope.',
    ])
    // The dashboard's own rule: no API message under it.
    expect(await page.getByRole('alert').innerText()).not.toContain('invalid')
    const note = field(page, 'Note')
    expect(await note.getAttribute('aria-invalid')).toBe('true')
    expect(await description(note)).toBe(
      'Enter a note: what the token is for, so that you recognise it later. Required: what the token is for, so that you recognise it later.',
    )
    const publicScopes = page.getByRole('group', { name: 'Public scopes' })
    expect(await description(publicScopes)).toBe('Choose at least one scope.')
    expect(await page.locator('#scopes-error').isVisible()).toBe(true)
    await bothWidths(page, 'create-token-untouched')
    await clip(
      page,
      'doc-create-token-refused',
      page.getByRole('heading', { level: 1 }),
      publicScopes,
    )
    // The summary's link takes the focus to the field.
    await link(
      page.getByRole('alert'),
      'Enter a note: what the token is for, so that you recognise it later.',
    ).click()
    expect(await focused(page)).toBe('note')
    expect(await listed('newcomer', sk)).toEqual(before)

    // A note alone: the scope is still asked for, the note kept and no longer marked.
    await note.fill('maps')
    expect((await click(page, 'Create token')).statuses).toEqual([422])
    expect(await summaryLinks(page)).toEqual(['Choose at least one scope.'])
    expect(await field(page, 'Note').inputValue()).toBe('maps')
    expect(await field(page, 'Note').getAttribute('aria-invalid')).toBeNull()
    expect(await listed('newcomer', sk)).toEqual(before)

    await checkbox(page, 'styles:read').check()
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    expect(await heading(page)).toBe('Token created')
    const made = (await listed('newcomer', sk)).find((t) => t.note === 'maps')
    expect(made?.scopes).toEqual(['styles:read'])
    await context.close()
  })

  it("says a policy's refusal at the field it concerns, in words, the API's message beneath", async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'policed')
    const sk = await reader('policed')
    await tessera(dash.server.env, 'policy', 'set', 'policed', '--max-sk-lifetime-days', '30')
    const before = await listed('policed', sk)
    await follow(page, 'Create a token')
    await field(page, 'Note').fill('backend')
    await checkbox(page, 'tokens:read').check()
    const refused = await click(page, 'Create token')
    expect(refused.statuses).toEqual([422])
    const sentence =
      'Your account’s token policy requires a secret token to end within 30 days: set Expires at.'
    expect(await headline(page)).toBe('The token was not created.')
    expect(await summaryLinks(page)).toEqual([sentence])
    expect(await page.getByRole('alert').innerText()).toContain(
      'The API answers this with “resources are invalid”.',
    )
    const end = field(page, 'Expires at')
    expect(await end.getAttribute('aria-invalid')).toBe('true')
    expect(await description(end)).toMatch(new RegExp(`^${sentence.replace(/[.()]/g, '\\$&')} `))
    expect(await page.locator('#expires-at-error').innerText()).toBe(sentence)
    expect(await field(page, 'Note').getAttribute('aria-invalid')).toBeNull()
    expect(await field(page, 'Note').inputValue()).toBe('backend')
    expect(await checkbox(page, 'tokens:read').isChecked()).toBe(true)
    await bothWidths(page, 'create-token-refused')
    await clip(
      page,
      'doc-expires-at-refused',
      page.getByText('Expires at', { exact: true }),
      button(page, 'Create token'),
      800,
    )
    await link(page.getByRole('alert'), sentence).click()
    expect(await focused(page)).toBe('expires-at')
    expect(await listed('policed', sk)).toEqual(before)

    // A URL that is none, on a public token: named, at Allowed URLs.
    await checkbox(page, 'tokens:read').uncheck()
    await checkbox(page, 'styles:read').check()
    await field(page, 'Allowed URLs').fill('https://example.com\nnot a url')
    expect((await click(page, 'Create token')).statuses).toEqual([422])
    expect(await summaryLinks(page)).toEqual(['“not a url” is not a URL or host name.'])
    expect(await page.locator('#allowed-urls-error').innerText()).toBe(
      '“not a url” is not a URL or host name.',
    )
    expect(await field(page, 'Allowed URLs').inputValue()).toBe('https://example.com\nnot a url')
    expect(await field(page, 'Expires at').getAttribute('aria-invalid')).toBeNull()

    await checkbox(page, 'styles:read').uncheck()
    await checkbox(page, 'tokens:read').check()
    await field(page, 'Allowed URLs').fill('')
    await field(page, 'Expires at').fill(fieldValue(Date.now() + 10 * dayMs))
    expect((await click(page, 'Create token')).statuses).toEqual([200])

    // The owner's token policy form: the sentence at the rule it concerns.
    await follow(page, 'Settings')
    await field(page, 'Delete tokens unused for (days)').fill('3')
    expect((await click(page, 'Save token policy')).statuses).toEqual([422])
    const section = page.getByRole('region', { name: 'Token policy' })
    expect(await section.getByRole('alert').locator('strong').innerText()).toBe(
      'The token policy was not saved.',
    )
    const idle = field(page, 'Delete tokens unused for (days)')
    expect(await idle.getAttribute('aria-invalid')).toBe('true')
    expect(await description(idle)).toMatch(
      /^Delete tokens unused for \(days\) must be a whole number from 8 to 3650\. Public and secret/,
    )
    expect(await idle.inputValue()).toBe('3')
    await bothWidths(page, 'token-policy-refused-at-field')
    await context.close()
  })

  it('"Needs attention" after a roll: one line a token, no Extend on the old string, every name unique', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'roller')
    const sk = await reader('roller')
    const deployEnd = Date.now() + 3 * dayMs
    await follow(page, 'Create a token')
    await field(page, 'Note').fill('deploy')
    await checkbox(page, 'tokens:read').check()
    await field(page, 'Expires at').fill(fieldValue(deployEnd))
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    await follow(page, 'Token settings')
    const oldId = pathOf(page).split('/').at(-1) as string
    await field(page, 'The old token stops working').selectOption('1h')
    expect((await click(page, 'Roll token')).statuses).toEqual([200])
    // Two tokens of one note, both ending within the week.
    const twins: string[] = []
    for (const days of [4, 5]) {
      const made = await api(dash.server, 'POST', '/tokens/v2/roller', sk, {
        note: 'twin',
        scopes: ['styles:read'],
        expiresAt: new Date(Date.now() + days * dayMs).toISOString(),
      })
      expect(made.status).toBe(200)
      twins.push(made.body.id)
    }
    const successor = (await listed('roller', sk)).find(
      (t) => t.note === 'deploy' && t.id !== oldId,
    )

    for (const where of ['/account', '/account/settings']) {
      await visit(page, `${dash.server.url}${where}`)
      const region = attention(page)
      const items = await noticeTexts(region)
      expect(items, where).toHaveLength(4)
      expect(new Set(items).size).toBe(4)
      expect(items[0]).toMatch(
        /^deploy old string sk was rolled: it stops working .+ \(in (59|60) minutes\)\. Make sure your applications use the new string\./,
      )
      expect(items[1]).toContain(`deploy sk expires ${dayText(deployEnd)} (in 3 days)`)
      expect(items[2]).toContain('twin pk expires')
      expect(items[3]).toContain('twin pk expires')
      // The old string: no Extend, its Delete named apart from its successor's.
      expect(await region.getByRole('listitem').nth(0).getByRole('button').count()).toBe(0)
      expect(await link(region, 'deploy').first().getAttribute('href')).toBe(
        `/account/tokens/${oldId}`,
      )
      const names = await actionNames(region)
      expect(names, where).toEqual(
        [
          'Delete deploy',
          'Delete the old string of deploy',
          'Extend deploy',
          `Delete twin (${twins[0]})`,
          `Delete twin (${twins[1]})`,
          `Extend twin (${twins[0]})`,
          `Extend twin (${twins[1]})`,
        ].sort(),
      )
    }
    await visit(page, `${dash.server.url}/account`)
    await bothWidths(page, 'needs-attention')
    await attention(page).screenshot({ path: path.join(screenshotDir, 'doc-needs-attention.png') })

    // The old string is not extended, even by a form sent by hand: 409, nothing changed.
    const sent = await formOf(button(page, 'Extend deploy'))
    const forged = await postForm(
      context,
      `${dash.server.url}/account/tokens/${oldId}/extend`,
      sent.fields,
      { origin: dash.server.url },
    )
    expect(forged.status()).toBe(409)
    expect(await forged.text()).toContain(
      'This token was rolled: its old string cannot be extended.',
    )
    const old = (await listed('roller', sk)).find((t) => t.id === oldId)
    expect(old?.expiresAt).toBe(new Date(Math.floor(deployEnd / 60_000) * 60_000).toISOString())

    // Extend on the successor's line extends the successor.
    expect((await click(page, 'Extend deploy')).statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Token extended.')
    const after = (await listed('roller', sk)).find((t) => t.id === successor?.id)
    expect(Date.parse(after?.expiresAt ?? '')).toBeGreaterThan(Date.now() + 29 * dayMs)
    const items = await noticeTexts(attention(page))
    expect(items).toHaveLength(3)
    expect(items[0]).toMatch(/^deploy old string sk was rolled/)
    await context.close()
  })
})
