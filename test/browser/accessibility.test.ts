import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { browserAvailable } from './browser.js'
import {
  accountWithPassword,
  button,
  checkbox,
  click,
  createAccount,
  field,
  follow,
  heading,
  inspect,
  navigation,
  newContext,
  pathOf,
  setPassword,
  setupLink,
  signedIn,
  signIn,
  tokenId,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const adminSecret = 'a11y-admin-0123456789abcdefghijklmnopqrstuvwxyz'

/**
 * axe-core on every page of the dashboard (Usage and credits too), error pages included, with a
 * full-page screenshot of each under test-output/screenshots; then a token created with the
 * keyboard alone.
 */
describe.skipIf(!available)('accessibility of every dashboard page', () => {
  const dash = useDashboard({ env: { DASHBOARD_SIGNUP: 'open', ADMIN_KEYS: `ops:${adminSecret}` } })

  it('pages before signing in: sign in, setup, sign up, 401, 404, 410, 429', async () => {
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    expect((await visit(page, `${dash.server.url}/account/sign-in`)).statuses).toEqual([200])
    await inspect(page, 'sign-in')

    const account = await createAccount(dash.server, 'a11ysetup')
    expect((await visit(page, setupLink(dash.server, account.setupUrl))).statuses).toEqual([200])
    await inspect(page, 'setup')
    const mismatch = await setPassword(
      page,
      dash.server,
      account.setupUrl,
      'one password!',
      'another one!',
    )
    expect(mismatch.statuses).toEqual([422])
    await inspect(page, 'setup-error')

    expect((await visit(page, `${dash.server.url}/account/sign-up`)).statuses).toEqual([200])
    await inspect(page, 'sign-up')

    expect((await signIn(page, dash.server, 'a11ysetup', 'not set yet at all')).statuses).toEqual([
      401,
    ])
    await inspect(page, 'sign-in-failed')

    const never = await visit(page, `${dash.server.url}/account/setup/${'A'.repeat(43)}`)
    expect(never.statuses).toEqual([404])
    await inspect(page, 'error-404-setup')

    expect(
      (await setPassword(page, dash.server, account.setupUrl, 'a11y password!')).statuses,
    ).toEqual([303, 200])
    await click(page, 'Sign out')
    expect((await visit(page, setupLink(dash.server, account.setupUrl))).statuses).toEqual([410])
    await inspect(page, 'error-410')

    await accountWithPassword(dash.browser, dash.server, 'a11ythrottled', 'the right password')
    for (let i = 0; i < 5; i++)
      await signIn(page, dash.server, 'a11ythrottled', `wrong password ${i}`)
    expect(
      (await signIn(page, dash.server, 'a11ythrottled', 'the right password')).statuses,
    ).toEqual([429])
    await inspect(page, 'error-429')
    await context.close()
  })

  it('pages of a signed-in holder: tokens, new token, reveal, token, delete, temporary, scopes, settings', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'a11y')
    await inspect(page, 'tokens')
    await follow(page, 'Create a token')
    await inspect(page, 'new-token')
    await field(page, 'Note').fill('screen reader')
    await checkbox(page, 'tokens:read').check()
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    expect(await heading(page)).toBe('Token created')
    await inspect(page, 'reveal')

    await follow(page, 'Access tokens')
    const id = await tokenId(page, 'screen reader')
    await inspect(page, 'tokens-with-rows')
    await follow(page, 'screen reader')
    await inspect(page, 'token')
    await click(page, 'Delete token')
    expect(pathOf(page)).toBe(`/account/tokens/${id}/delete`)
    await inspect(page, 'delete')

    await visit(page, `${dash.server.url}/account/temporary`)
    await inspect(page, 'temporary')
    await follow(page, 'Scopes')
    await inspect(page, 'scopes')
    await follow(page, 'Settings')
    await inspect(page, 'settings')
    await context.close()
  })

  it("the Usage page and credits: by hour and by day, the account's credits, a token credits form error", async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'a11yusage')
    await follow(page, 'Usage')
    expect(await heading(page)).toBe('Usage')
    await inspect(page, 'usage-empty')
    await follow(page, 'Last 30 days')
    await inspect(page, 'usage-days-empty')
    // The account's credits are the operator's (the admin API): shown read-only.
    const set = await context.request.put(
      `${dash.server.url}/admin/v1/accounts/a11yusage/credits`,
      {
        headers: { authorization: `Bearer ${adminSecret}` },
        data: { remaining: 1000, refill: { interval: 'monthly', amount: 1000, day: 1 } },
      },
    )
    expect(set.status()).toBe(200)
    await visit(page, `${dash.server.url}/account/usage`)
    await expect(
      page.getByText('Your provider sets the account’s credits.', { exact: true }).count(),
    ).resolves.toBe(1)
    await inspect(page, 'usage-with-credits')
    await follow(page, 'Access tokens')
    await follow(page, 'Default public token')
    await field(page, 'Credits remaining').fill('-1')
    expect((await click(page, 'Save credits')).statuses).toEqual([422])
    await inspect(page, 'token-credits-form-error')
    await field(page, 'Credits remaining').fill('100')
    expect((await click(page, 'Save credits')).statuses).toEqual([303, 200])
    expect(pathOf(page)).toMatch(/^\/account\/tokens\/c[a-z0-9]{24}$/)
    await inspect(page, 'token-with-credits')
    await context.close()
  })

  it('error pages of a signed-in holder: a form error, 403, 404', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'a11yerrors')
    await visit(page, `${dash.server.url}/account/tokens/new`)
    await field(page, 'Note').fill('bad url')
    await checkbox(page, 'styles:read').check()
    await field(page, 'Allowed URLs').fill('not a url')
    expect((await click(page, 'Create token')).statuses).toEqual([422])
    await inspect(page, 'form-error')

    // A form whose CSRF token was tampered with, submitted by the browser itself.
    await visit(page, `${dash.server.url}/account/tokens/new`)
    await button(page, 'Create token').evaluate((b: { form: { elements: unknown } }) => {
      const csrf = (b.form.elements as Record<string, { value: string }>)._csrf
      if (csrf) csrf.value = 'forged'
    })
    expect((await click(page, 'Create token')).statuses).toEqual([403])
    await inspect(page, 'error-403')

    expect((await visit(page, `${dash.server.url}/account/no-such-page`)).statuses).toEqual([404])
    await inspect(page, 'error-404')
    await context.close()
  })

  /** Presses `key` until the focused element's accessibility snapshot matches. */
  async function focusBy(page: Page, key: 'Tab' | 'Shift+Tab', wanted: RegExp): Promise<string> {
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press(key)
      const focused = page.locator(':focus')
      if ((await focused.count()) === 0) continue
      const snapshot = await focused.ariaSnapshot()
      if (wanted.test(snapshot)) return snapshot
    }
    throw new Error(`${wanted} never got the focus with ${key}`)
  }

  it('creates a token with the keyboard alone', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'keyboard')
    expect(await heading(page)).toBe('Access tokens')
    await focusBy(page, 'Tab', /^- link "Create a token"/)
    const opened = await navigation(page, () => page.keyboard.press('Enter'))
    expect(opened.statuses).toEqual([200])
    expect(pathOf(page)).toBe('/account/tokens/new')

    await focusBy(page, 'Tab', /^- textbox "Note"/)
    await page.keyboard.type('typed on a keyboard')
    await focusBy(page, 'Tab', /^- checkbox "styles:read"/)
    await page.keyboard.press('Space')
    await expect(page.locator(':focus').ariaSnapshot()).resolves.toMatch(
      /^- checkbox "styles:read" \[checked\]/,
    )
    // Back to the note, and Enter submits the form from there.
    await focusBy(page, 'Shift+Tab', /^- textbox "Note"/)
    const created = await navigation(page, () => page.keyboard.press('Enter'))
    expect(created.statuses).toEqual([200])
    expect(await heading(page)).toBe('Token created')
    await expect(field(page, 'New token').inputValue()).resolves.toMatch(/^pk\./)
    await context.close()
  })

  it('says live whether the new token will be public or secret', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'hint')
    await visit(page, `${dash.server.url}/account/tokens/new`)
    const hint = page.locator('#usage-hint')
    const role = await hint.getAttribute('role')
    const live = await hint.getAttribute('aria-live')
    expect(role === 'status' || live === 'polite' || live === 'assertive', `${role} ${live}`).toBe(
      true,
    )
    const pk = 'This will be a public token (pk).'
    const sk = 'This will be a secret token (sk).'
    await expect.poll(async () => (await hint.innerText()).trim()).toBe(pk)
    await checkbox(page, 'styles:read').check()
    await expect.poll(async () => (await hint.innerText()).trim()).toBe(pk)
    await checkbox(page, 'tokens:read').check()
    await expect.poll(async () => (await hint.innerText()).trim()).toBe(sk)
    await checkbox(page, 'tokens:read').uncheck()
    await expect.poll(async () => (await hint.innerText()).trim()).toBe(pk)
    await context.close()
  })
})
