import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { browserAvailable, launchBrowser } from '../browser/browser.js'
import {
  bodyText,
  button,
  click,
  createAccount,
  field,
  heading,
  navigation,
  newContext,
  virtualAuthenticator,
  visit,
} from '../browser/dashboard.js'
import { type ServerProcess, startServer } from '../e2e/server.js'
import { freePort } from '../oidc.js'
import { fleetEnv } from './env.js'

const available = browserAvailable()
const fleet = fleetEnv()
const password = 'correct horse battery staple'
let first: ServerProcess
let second: ServerProcess
let browser: Browser
let portA = 0
let portB = 0

beforeAll(async () => {
  if (!available) return
  ;[portA, portB] = [await freePort(), await freePort()]
  // One public address for both, as behind a load balancer: the page is on the first's port.
  const env = { ...fleet.env, PUBLIC_URL: `https://localhost:${portA}` }
  ;[first, second, browser] = await Promise.all([
    startServer({ ...env, PORT: String(portA) }),
    startServer({ ...env, PORT: String(portB) }),
    launchBrowser(),
  ])
})
afterAll(async () => {
  await browser?.close()
  await Promise.all([first?.stop(), second?.stop()])
  await fleet.drop()
})

/** Requests for `path` go to the second instance instead (the load balancer's choice). */
const toSecond = (page: Page, path: string) =>
  page.route(
    (url) => url.pathname === path,
    async (route) => {
      const url = route.request().url().replace(`:${portA}/`, `:${portB}/`)
      await route.fulfill({ response: await route.fetch({ url, maxRedirects: 0 }) })
    },
  )

it.skipIf(!available)(
  'finishes on one instance a passkey ceremony begun on the other',
  async () => {
    const base = `https://localhost:${portA}`
    const account = await createAccount(first, 'fleet-keys')
    const context = await newContext(browser)
    const page = await context.newPage()
    await visit(page, base + new URL(account.setupUrl).pathname)
    await field(page, 'New password').fill(password)
    await field(page, 'Confirm password').fill(password)
    await click(page, 'Set password')
    await virtualAuthenticator(page)

    // Registration: the challenge made by the first, the answer checked by the second.
    await toSecond(page, '/account/passkeys/register')
    await visit(page, `${base}/account/settings`)
    await field(page, 'Passkey name').fill('Fleet key')
    const added = await navigation(page, () => button(page, 'Add a passkey').click())
    expect(added.statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Passkey added')
    await page.unrouteAll()
    await click(page, 'Sign out')

    // Sign-in: the challenge made by the second, the answer checked by the first.
    await toSecond(page, '/account/passkeys/signin/options')
    await visit(page, `${base}/account/sign-in`)
    const signedIn = await navigation(page, () => button(page, 'Sign in with a passkey').click())
    expect(signedIn.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await context.close()
  },
)
