import { randomBytes } from 'node:crypto'
import type { BrowserContext } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
import {
  accountWithPassword,
  bodyText,
  button,
  click,
  createAccount,
  evil,
  expectPageHeaders,
  field,
  follow,
  formOf,
  heading,
  newContext,
  pathAndQuery,
  postForm,
  retrieveCode,
  sessionCookieOf,
  setPassword,
  setupLink,
  signedIn,
  signIn,
  tokenRow,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/** Sessions, setup links and sign-up (DASHBOARD.md sections 2 and 5). */
describe.skipIf(!available)('sessions and setup links', () => {
  const dash = useDashboard()

  const sessionCookie = (context: BrowserContext) => sessionCookieOf(context, dash.server)

  describe('sessions', () => {
    it('Sign out everywhere ends every session of the account', async () => {
      const a = await signedIn(dash.browser, dash.server, 'everywhere')
      const b = await newContext(dash.browser)
      const other = await b.newPage()
      expect((await signIn(other, dash.server, 'everywhere', a.password)).statuses).toEqual([
        303, 200,
      ])
      const stolen = await sessionCookie(a.context)

      await follow(a.page, 'Settings')
      const out = await click(a.page, 'Sign out everywhere')
      expect(out.statuses.at(-1)).toBe(200)
      expect(await heading(a.page)).toBe('Sign in')
      for (const page of [a.page, other]) {
        await visit(page, `${dash.server.url}/account/settings`)
        expect(pathAndQuery(page.url())).toBe('/account/sign-in?next=%2Faccount%2Fsettings')
      }
      const thief = await newContext(dash.browser)
      await thief.addCookies([stolen as NonNullable<typeof stolen>])
      const replay = await thief.newPage()
      await visit(replay, `${dash.server.url}/account`)
      expect(pathAndQuery(replay.url())).toBe('/account/sign-in')
      await Promise.all([a.context.close(), b.close(), thief.close()])
    })

    it('a password change ends the other sessions and keeps the current one', async () => {
      const a = await signedIn(dash.browser, dash.server, 'rotate')
      const b = await newContext(dash.browser)
      const other = await b.newPage()
      expect((await signIn(other, dash.server, 'rotate', a.password)).statuses).toEqual([303, 200])

      await visit(a.page, `${dash.server.url}/account/settings`)
      await field(a.page, 'Current password').fill(a.password)
      await field(a.page, 'New password').fill('the rotated password')
      const changed = await click(a.page, 'Change password')
      expect(changed.statuses).toEqual([303, 200])
      expect(await bodyText(a.page)).toContain('Password changed')

      await visit(other, `${dash.server.url}/account`)
      expect(pathAndQuery(other.url())).toBe('/account/sign-in')
      const kept = await visit(a.page, `${dash.server.url}/account`)
      expect(kept.statuses).toEqual([200])
      expect(await heading(a.page)).toBe('Access tokens')
      await Promise.all([a.context.close(), b.close()])
    })

    it('answers a wrong password and an unknown username with the same 401 page', async () => {
      await accountWithPassword(dash.browser, dash.server, 'wrongpw', 'the right password')
      const context = await newContext(dash.browser)
      const page = await context.newPage()
      const texts: string[] = []
      for (const [username, password] of [
        ['wrongpw', 'not the right password'],
        ['nobody-here', 'the right password'],
      ] as const) {
        const answer = await signIn(page, dash.server, username, password)
        expect(answer.statuses, username).toEqual([401])
        expectPageHeaders(await answer.response.allHeaders(), `401 (${username})`)
        expect(await heading(page)).toBe('Sign in')
        const text = await bodyText(page)
        expect(text).toContain('Wrong username or password')
        texts.push(text.replace(username, '<username>'))
      }
      expect(texts[0]).toBe(texts[1])
      await expect(sessionCookie(context)).resolves.toBeUndefined()
      await context.close()
    })
  })

  describe('setup links', () => {
    it('works once: a used link answers 410, a link never issued 404', async () => {
      const account = await createAccount(dash.server, 'onetime')
      const context = await newContext(dash.browser)
      const page = await context.newPage()
      expect(
        (await setPassword(page, dash.server, account.setupUrl, 'one time password')).statuses,
      ).toEqual([303, 200])
      await click(page, 'Sign out')
      const used = await visit(page, setupLink(dash.server, account.setupUrl))
      expect(used.statuses).toEqual([410])
      expectPageHeaders(await used.response.allHeaders(), '410 setup link')
      await expect(field(page, 'New password').count()).resolves.toBe(0)

      const forged = `${dash.server.url}/account/setup/${randomBytes(32).toString('base64url')}`
      const never = await visit(page, forged)
      expect(never.statuses).toEqual([404])
      expectPageHeaders(await never.response.allHeaders(), '404 setup link')
      await expect(field(page, 'New password').count()).resolves.toBe(0)
      await context.close()
    })

    it('an invite voids the older link and resets a forgotten password', async () => {
      const account = await createAccount(dash.server, 'invitee')
      const invite = await tessera(dash.server.env, 'account', 'invite', 'invitee')
      expect(invite.username).toBe('invitee')
      expect(new URL(invite.setupUrl).pathname).not.toBe(new URL(account.setupUrl).pathname)
      const context = await newContext(dash.browser)
      const page = await context.newPage()
      const old = await visit(page, setupLink(dash.server, account.setupUrl))
      expect(old.statuses).toEqual([410])
      expect(
        (await setPassword(page, dash.server, invite.setupUrl, 'invited password')).statuses,
      ).toEqual([303, 200])
      await click(page, 'Sign out')

      // Forgotten: a new invite sets a new password; the old one stops working.
      const reset = await tessera(dash.server.env, 'account', 'invite', 'invitee')
      expect(
        (await setPassword(page, dash.server, reset.setupUrl, 'reset password!')).statuses,
      ).toEqual([303, 200])
      await click(page, 'Sign out')
      expect((await signIn(page, dash.server, 'invitee', 'invited password')).statuses).toEqual([
        401,
      ])
      expect((await signIn(page, dash.server, 'invitee', 'reset password!')).statuses).toEqual([
        303, 200,
      ])
      await context.close()
    })
  })
})

describe.skipIf(!available)('sign-up when DASHBOARD_SIGNUP=open', () => {
  const dash = useDashboard({ env: { DASHBOARD_SIGNUP: 'open' } })

  it('creates an account with its default token and signs the holder in', async () => {
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const opened = await visit(page, `${dash.server.url}/account/sign-up`)
    expect(opened.statuses).toEqual([200])
    expectPageHeaders(await opened.response.allHeaders(), 'sign-up')
    expect(await heading(page)).toBe('Create an account')
    await field(page, 'Username').fill('newcomer')
    await field(page, 'Password').fill('newcomer password')
    const created = await click(page, 'Create account')
    expect(created.statuses).toEqual([303, 200])
    expect(page.url()).toBe(`${dash.server.url}/account`)
    expect(await heading(page)).toBe('Access tokens')
    const token = await tokenRow(page, 'Default public token').locator('code').innerText()
    expect(token).toMatch(/^pk\./)
    await expect(retrieveCode(dash.server, token)).resolves.toBe('TokenValid')

    await click(page, 'Sign out')
    expect((await signIn(page, dash.server, 'newcomer', 'newcomer password')).statuses).toEqual([
      303, 200,
    ])
    await context.close()
  })

  it('refuses a short password with 422 and a foreign Origin with 403', async () => {
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    await visit(page, `${dash.server.url}/account/sign-up`)
    await field(page, 'Username').fill('shorty')
    await field(page, 'Password').fill('short')
    const short = await click(page, 'Create account')
    expect(short.statuses).toEqual([422])
    expectPageHeaders(await short.response.allHeaders(), '422 sign-up')
    await expect(page.getByRole('alert').count()).resolves.toBe(1)
    await expect(field(page, 'Username').inputValue()).resolves.toBe('shorty')

    await field(page, 'Password').fill('a long enough password')
    const form = await formOf(button(page, 'Create account'))
    const forged = await postForm(context, form.action, form.fields, { Origin: evil })
    expect(forged.status()).toBe(403)
    // Nothing was created: the name is still free.
    const created = await click(page, 'Create account')
    expect(created.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await context.close()
  })
})

describe.skipIf(!available)('behind a proxy (TRUST_PROXY=1)', () => {
  const dash = useDashboard({ env: { TRUST_PROXY: '1' }, browser: false })

  it('refuses a dashboard request that did not come over HTTPS with a 403 page', async () => {
    const plain = await fetch(`${dash.server.url}/account/sign-in`, { redirect: 'manual' })
    expect(plain.status).toBe(403)
    expectPageHeaders(Object.fromEntries(plain.headers), '403 behind proxy')
    const secure = await fetch(`${dash.server.url}/account/sign-in`, {
      redirect: 'manual',
      headers: { 'X-Forwarded-Proto': 'https' },
    })
    expect(secure.status).toBe(200)
  })
})
