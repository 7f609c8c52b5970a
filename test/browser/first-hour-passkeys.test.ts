import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { freePort } from '../oidc.js'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  button,
  click,
  createAccount,
  field,
  follow,
  heading,
  inspect,
  link,
  navigation,
  newContext,
  screenshot,
  virtualAuthenticator,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const password = 'correct horse battery'
const phone = { width: 390, height: 844 }

/**
 * Browsers refuse passkeys at an IP address. Without PUBLIC_URL, links point to
 * https://HOST:PORT (the contract's default, 127.0.0.1) and the banner prints the dashboard at
 * https://localhost:PORT, where a passkey is added and used; a page reached at an IP address
 * offers none and says where they work.
 */

/** The page at a phone's width too: screenshot and axe at both. */
async function inspectBoth(page: Page, name: string) {
  await inspect(page, name)
  const desktop = page.viewportSize()
  await page.setViewportSize(phone)
  await inspect(page, `${name}-phone`)
  if (desktop) await page.setViewportSize(desktop)
}

const passwordSignIn = async (page: Page, origin: string, username: string) => {
  await visit(page, `${origin}/account/sign-in`)
  await field(page, 'Username').fill(username)
  await field(page, 'Password').fill(password)
  return click(page, 'Sign in')
}

describe.skipIf(!available)('passkeys without PUBLIC_URL', () => {
  let port = 0
  const dash = useDashboard({
    env: async () => {
      port = await freePort()
      return { PORT: String(port) }
    },
  })
  const localhost = () => `https://localhost:${port}`

  it('are offered at the printed https://localhost:PORT: one is added and signs in', async () => {
    const account = await createAccount(dash.server, 'first')
    // The setup link is at PUBLIC_URL's default, https://HOST:PORT (CONTRACT.md §1).
    expect(account.setupUrl.startsWith(`https://127.0.0.1:${port}/account/setup/`)).toBe(true)
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    await visit(page, account.setupUrl)
    await field(page, 'New password').fill(password)
    await field(page, 'Confirm password').fill(password)
    expect((await click(page, 'Set password')).statuses).toEqual([303, 200])
    // The dashboard at the address the banner prints for it, where passkeys work.
    expect((await passwordSignIn(page, localhost(), 'first')).statuses).toEqual([303, 200])
    await virtualAuthenticator(page)
    await follow(page, 'Settings')
    await field(page, 'Passkey name').fill('Laptop')
    const added = await navigation(page, () => button(page, 'Add a passkey').click())
    expect(added.statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Passkey added')
    await click(page, 'Sign out')

    await visit(page, `${localhost()}/account/sign-in`)
    const signedIn = await navigation(page, () => button(page, 'Sign in with a passkey').click())
    expect(signedIn.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await context.close()
  })

  it('are not offered at https://127.0.0.1:PORT, which links to where they work', async () => {
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const elsewhere = `Passkeys work at this server's own address: ${localhost()}.`
    await visit(page, `${dash.server.url}/account/sign-in`)
    expect(await button(page, 'Sign in with a passkey').count()).toBe(0)
    expect(await bodyText(page)).toContain(elsewhere)
    expect(await link(page, localhost()).getAttribute('href')).toBe(
      `${localhost()}/account/sign-in`,
    )
    await inspectBoth(page, 'first-hour-sign-in-at-ip')

    // The second step of one who has a passkey: the code only.
    expect((await passwordSignIn(page, dash.server.url, 'first')).statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Two-step sign-in')
    expect(await button(page, 'Use a passkey').count()).toBe(0)
    expect(await bodyText(page)).toContain(elsewhere)
    await screenshot(page, 'first-hour-two-step-at-ip')
    await context.close()
  })

  it('are not offered on Settings at https://127.0.0.1:PORT', async () => {
    const account = await createAccount(dash.server, 'second')
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    await visit(page, dash.server.url + new URL(account.setupUrl).pathname)
    await field(page, 'New password').fill(password)
    await field(page, 'Confirm password').fill(password)
    expect((await click(page, 'Set password')).statuses).toEqual([303, 200])
    await follow(page, 'Settings')
    expect(await button(page, 'Add a passkey').count()).toBe(0)
    expect(await field(page, 'Passkey name').count()).toBe(0)
    expect(await bodyText(page)).toContain(
      `Passkeys work at this server's own address: ${localhost()}.`,
    )
    expect(await link(page, localhost()).getAttribute('href')).toBe(
      `${localhost()}/account/settings`,
    )
    await context.close()
  })
})

describe.skipIf(!available)('passkeys where PUBLIC_URL is an IP address', () => {
  let port = 0
  const dash = useDashboard({
    env: async () => {
      port = await freePort()
      return { PORT: String(port), PUBLIC_URL: `https://127.0.0.1:${port}` }
    },
  })
  const nowhere =
    "Passkeys are not offered here: browsers allow them only at a domain name, and this server's address is an IP address."

  it('are offered nowhere, and the pages say why', async () => {
    const account = await createAccount(dash.server, 'numeric')
    expect(account.setupUrl.startsWith(`https://127.0.0.1:${port}/account/setup/`)).toBe(true)
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    await visit(page, `${dash.server.url}/account/sign-in`)
    expect(await button(page, 'Sign in with a passkey').count()).toBe(0)
    expect(await bodyText(page)).toContain(nowhere)
    await inspectBoth(page, 'first-hour-sign-in-public-ip')

    await visit(page, account.setupUrl)
    await field(page, 'New password').fill(password)
    await field(page, 'Confirm password').fill(password)
    expect((await click(page, 'Set password')).statuses).toEqual([303, 200])
    await follow(page, 'Settings')
    expect(await button(page, 'Add a passkey').count()).toBe(0)
    expect(await bodyText(page)).toContain(nowhere)
    await inspectBoth(page, 'first-hour-settings-public-ip')
    await context.close()
  })
})
