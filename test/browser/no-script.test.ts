import { describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  checkbox,
  click,
  createAccount,
  field,
  follow,
  heading,
  newContext,
  pathOf,
  retrieveCode,
  screenshot,
  setPassword,
  tokenRow,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/** Scripts may only enhance (DASHBOARD.md section 1): everything works with plain forms. */
describe.skipIf(!available)('the dashboard without JavaScript', () => {
  // Dashboard requests do not count against the account's API rate limit (DASHBOARD.md
  // section 4): the few API calls below fit in 6 a minute, the many page loads would not.
  const dash = useDashboard({ env: { RATE_LIMIT_PER_MINUTE: '6' } })

  it('sets a password, creates, reveals, edits and deletes a token, and signs out', async () => {
    const account = await createAccount(dash.server, 'noscript')
    const context = await newContext(dash.browser, { javaScriptEnabled: false })
    const page = await context.newPage()

    const set = await setPassword(page, dash.server, account.setupUrl, 'plain forms only')
    expect(set.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await expect(tokenRow(page, 'Default public token').locator('code').innerText()).resolves.toBe(
      account.defaultToken.token,
    )

    await follow(page, 'Create a token')
    expect(await heading(page)).toBe('Create a token')
    await field(page, 'Note').fill('no script')
    await checkbox(page, 'styles:read').check()
    await checkbox(page, 'tokens:read').check()
    await field(page, 'Allowed URLs').fill('https://example.com')
    const created = await click(page, 'Create token')
    expect(created.statuses).toEqual([200])
    expect(await heading(page)).toBe('Token created')
    const token = await field(page, 'New token').inputValue()
    expect(token).toMatch(/^sk\./)
    expect(await bodyText(page)).toContain('will not be shown again')
    await screenshot(page, 'no-script-reveal')
    await expect(retrieveCode(dash.server, token)).resolves.toBe('TokenValid')

    await follow(page, 'Access tokens')
    await follow(page, 'no script')
    expect(await heading(page)).toBe('no script')
    await field(page, 'Note').fill('no script, edited')
    await checkbox(page, 'styles:read').uncheck()
    await field(page, 'Allowed URLs').fill('')
    const saved = await click(page, 'Save changes')
    expect(saved.statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Changes saved')
    expect(await heading(page)).toBe('no script, edited')
    await expect(checkbox(page, 'styles:read').isChecked()).resolves.toBe(false)
    await expect(checkbox(page, 'tokens:read').isChecked()).resolves.toBe(true)
    await expect(field(page, 'Allowed URLs').inputValue()).resolves.toBe('')

    const asked = await click(page, 'Delete token')
    expect(asked.statuses.at(-1)).toBe(200)
    expect(await heading(page)).toBe('Delete this token?')
    await screenshot(page, 'no-script-delete')
    const deleted = await click(page, 'Delete')
    expect(deleted.statuses).toEqual([303, 200])
    expect(pathOf(page)).toBe('/account')
    await expect(tokenRow(page, 'no script, edited').count()).resolves.toBe(0)
    await expect(retrieveCode(dash.server, token)).resolves.toBe('TokenRevoked')
    const counted = await api(dash.server, 'GET', '/tokens/v2', account.defaultToken.token)
    expect(counted.status).toBe(200)
    expect(counted.headers['x-rate-limit-limit']).toBe('6')

    const out = await click(page, 'Sign out')
    expect(out.statuses.at(-1)).toBe(200)
    expect(await heading(page)).toBe('Sign in')
    await visit(page, `${dash.server.url}/account`)
    expect(pathOf(page)).toBe('/account/sign-in')
    await context.close()
  })
})
