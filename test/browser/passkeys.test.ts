import type { BrowserContext, CDPSession, Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
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
  navigation,
  newContext,
  sessionCookieOf,
  virtualAuthenticator,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const password = 'correct horse battery'

/**
 * Passkeys in Chromium with a virtual authenticator (the DevTools Protocol's WebAuthn domain):
 * CTAP2, internal transport, resident keys, user verification. WebAuthn needs a domain name as
 * relying party id, so the dashboard is reached as https://localhost here.
 */
describe.skipIf(!available)('passkeys (WebAuthn)', () => {
  const dash = useDashboard({ webauthn: true })

  const authenticator = virtualAuthenticator
  const credentials = async (a: { cdp: CDPSession; authenticatorId: string }) =>
    (await a.cdp.send('WebAuthn.getCredentials', { authenticatorId: a.authenticatorId }))
      .credentials

  const addPasskey = async (page: Page, name: string) => {
    await visit(page, `${dash.url}/account/settings`)
    await field(page, 'Passkey name').fill(name)
    const added = await navigation(page, () => button(page, 'Add a passkey').click())
    expect(added.statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Passkey added')
  }

  const signInWithPasskey = async (page: Page) => {
    await visit(page, `${dash.url}/account/sign-in`)
    return navigation(page, () => button(page, 'Sign in with a passkey').click())
  }

  it('registers passkeys, signs in with one alone, removes one; a removed one is refused', async () => {
    const account = await createAccount(dash.server, 'keys')
    const context: BrowserContext = await newContext(dash.browser)
    const page = await context.newPage()
    await visit(page, dash.url + new URL(account.setupUrl).pathname)
    await field(page, 'New password').fill(password)
    await field(page, 'Confirm password').fill(password)
    await click(page, 'Set password')
    const device = await authenticator(page)

    await addPasskey(page, 'Laptop')
    expect(await credentials(device)).toHaveLength(1)
    await inspect(page, 'settings-passkey')
    await click(page, 'Sign out')

    // With a passkey, a password sign-in asks for it as the second step.
    await visit(page, `${dash.url}/account/sign-in`)
    await field(page, 'Username').fill('keys')
    await field(page, 'Password').fill(password)
    expect((await click(page, 'Sign in')).statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Two-step sign-in')
    await inspect(page, 'two-step-passkey')
    const second = await navigation(page, () => button(page, 'Use a passkey').click())
    expect(second.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await click(page, 'Sign out')

    const signedIn = await signInWithPasskey(page)
    expect(signedIn.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await follow(page, 'Settings')
    expect(await bodyText(page)).toContain('Signed in with\na passkey')

    // A second passkey lives on another device (one authenticator holds one per account).
    const [laptop] = await credentials(device)
    expect(laptop?.isResidentCredential).toBe(true)
    await device.cdp.send('WebAuthn.removeVirtualAuthenticator', {
      authenticatorId: device.authenticatorId,
    })
    const phone = await authenticator(page)
    await addPasskey(page, 'Phone')
    expect(await bodyText(page)).toContain('Laptop')
    expect(await bodyText(page)).toContain('Phone')
    await click(page, 'Sign out')
    expect((await signInWithPasskey(page)).statuses).toEqual([303, 200])

    await follow(page, 'Settings')
    const removed = await navigation(page, () => button(page, 'Remove Laptop').click())
    expect(removed.statuses).toEqual([303, 200])
    expect(await bodyText(page)).not.toContain('Laptop')
    await click(page, 'Sign out')

    // A device holding only the removed credential: the server no longer knows it.
    await phone.cdp.send('WebAuthn.removeVirtualAuthenticator', {
      authenticatorId: phone.authenticatorId,
    })
    const old = await authenticator(page)
    await old.cdp.send('WebAuthn.addCredential', {
      authenticatorId: old.authenticatorId,
      credential: laptop as NonNullable<typeof laptop>,
    })
    const refused = await signInWithPasskey(page)
    expect(refused.statuses).toEqual([401])
    expect(await heading(page)).toBe('Sign-in refused')
    expect(await sessionCookieOf(context, dash.server)).toBeUndefined()
    await context.close()
  })

  it('says the passkey buttons need scripts when scripts are off; the rest still works', async () => {
    const context = await newContext(dash.browser, { javaScriptEnabled: false })
    const page = await context.newPage()
    await visit(page, `${dash.url}/account/sign-in`)
    expect(await button(page, 'Sign in with a passkey').isDisabled()).toBe(true)
    expect(await bodyText(page)).toContain(
      'Passkeys need JavaScript, which is off in this browser.',
    )
    await context.close()
  })
})
