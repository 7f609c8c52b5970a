import { readFileSync } from 'node:fs'
import { generateSync } from 'otplib'
import { describe, expect, it } from 'vitest'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  button,
  click,
  field,
  follow,
  heading,
  inspect,
  newContext,
  signedIn,
  signIn,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/** An authenticator app and recovery codes, by the accessible names of the pages. */
describe.skipIf(!available)('two-step sign-in in the browser', () => {
  const dash = useDashboard()

  it('enrols an app by its key, saves the recovery codes, then asks for a code at sign-in', async () => {
    const { page, context, password } = await signedIn(dash.browser, dash.server, 'two-step')
    await follow(page, 'Settings')
    await follow(page, 'Set up an authenticator app')
    expect(await heading(page)).toBe('Set up an authenticator app')
    expect(await page.getByRole('img', { name: 'QR code of the key' }).isVisible()).toBe(true)
    await inspect(page, 'totp-enrol')
    const secret = (await page.locator('code.secret').innerText()).replace(/\s/g, '')
    const now = () => Math.floor(Date.now() / 1000)
    await field(page, 'Code from the app').fill(generateSync({ secret, epoch: now() }))
    expect((await click(page, 'Turn on')).statuses).toEqual([200])
    expect(await heading(page)).toBe('Your recovery codes')
    await inspect(page, 'recovery-codes')
    const codes = await page.locator('ul.codes code').allInnerTexts()
    expect(codes).toHaveLength(10)
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      button(page, 'Download as a text file').click(),
    ])
    expect(download.suggestedFilename()).toBe('tessera-recovery-codes.txt')
    const file = readFileSync((await download.path()) as string, 'utf8')
    expect(file).toBe(`Tessera recovery codes for two-step\n\n${codes.join('\n')}\n`)
    await click(page, 'Sign out')

    expect((await signIn(page, dash.server, 'two-step', password)).statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Two-step sign-in')
    await inspect(page, 'two-step-verify')
    // The next window's code (the one of enrolment was taken).
    await field(page, 'Code').fill(generateSync({ secret, epoch: now() + 30 }))
    expect((await click(page, 'Verify')).statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await follow(page, 'Settings')
    expect(await bodyText(page)).toContain('Recovery codes left: 10.')
    await inspect(page, 'settings-two-step')
    await context.close()
  })

  it('takes a recovery code in place of the app, once', async () => {
    const { page, context, password } = await signedIn(dash.browser, dash.server, 'recovery')
    await follow(page, 'Settings')
    await follow(page, 'Set up an authenticator app')
    const secret = (await page.locator('code.secret').innerText()).replace(/\s/g, '')
    await field(page, 'Code from the app').fill(
      generateSync({ secret, epoch: Math.floor(Date.now() / 1000) }),
    )
    await click(page, 'Turn on')
    const [code] = await page.locator('ul.codes code').allInnerTexts()
    await click(page, 'Sign out')
    const other = await newContext(dash.browser)
    const second = await other.newPage()
    for (const expected of [[303, 200], [401]]) {
      await signIn(second, dash.server, 'recovery', password)
      await field(second, 'Code').fill(code as string)
      expect((await click(second, 'Verify')).statuses).toEqual(expected)
      if (expected.length === 2) await click(second, 'Sign out')
    }
    expect(await second.getByRole('alert').innerText()).toContain('That code is not right')
    await other.close()
    await context.close()
  })
})
