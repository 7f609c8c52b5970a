import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tessera } from '../e2e/server.js'
import { clientId, clientSecret, freePort, startProvider, type TestProvider } from '../oidc.js'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  click,
  createAccount,
  field,
  follow,
  heading,
  inspect,
  link,
  navigation,
  newContext,
  pathOf,
  sessionCookieOf,
  signIn,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const password = 'correct horse battery'

/**
 * Single sign-on against a real OpenID Connect provider (oidc-provider on loopback HTTPS): the
 * whole redirect flow in Chromium, and each way an answer must be refused with no session.
 */
describe.skipIf(!available)('single sign-on (OpenID Connect)', () => {
  let provider: TestProvider
  // Registered first, run last: after the fixture's browser and server.
  afterAll(async () => {
    await provider?.close()
  })
  const dash = useDashboard({
    env: async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'tessera-sso-'))
      const port = await freePort()
      const origin = `https://127.0.0.1:${port}`
      provider = await startProvider(`${origin}/account/sso/callback`, dir)
      return {
        PORT: String(port),
        PUBLIC_URL: origin,
        OIDC_ISSUER: provider.issuer,
        OIDC_CLIENT_ID: clientId,
        OIDC_CLIENT_SECRET: clientSecret,
        OIDC_NAME: 'Acme ID',
        OIDC_CA_FILE: provider.certFile,
        OIDC_ONLY: '1',
      }
    },
  })
  beforeAll(async () => {
    await createAccount(dash.server, 'acme')
  })

  /** Signs in at the provider's development login form (any password). */
  const providerLogin = async (page: Page, login: string) => {
    await page.locator('input[name="login"]').fill(login)
    await page.locator('input[name="password"]').fill('anything')
    return navigation(page, () => page.locator('button[type="submit"]').click())
  }

  /**
   * Starts a sign-in as the browser would (its cookies), stopping at the provider's door: the
   * authorization URL Tessera sent it to.
   */
  const authorizationUrl = async (page: Page) => {
    const start = await page
      .context()
      .request.get(`${dash.server.url}/account/sso`, { maxRedirects: 0 })
    expect(start.status()).toBe(303)
    return new URL(start.headers().location as string)
  }

  /**
   * Goes through the provider with the browser's cookies (its login form by its fields), and
   * stops before Tessera's callback: the URL the provider sent the browser back to.
   */
  const callbackUrl = async (page: Page, login: string, auth?: URL) => {
    const request = page.context().request
    let url = (auth ?? (await authorizationUrl(page))).href
    for (let hop = 0; hop < 10; hop++) {
      if (url.startsWith(`${dash.server.url}/account/sso/callback`)) return new URL(url)
      const res = await request.get(url, { maxRedirects: 0 })
      if (res.status() === 303 || res.status() === 302) {
        url = new URL(res.headers().location as string, url).href
        continue
      }
      const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/.exec(await res.text())
      expect(form, `a form at ${url}`).not.toBeNull()
      const posted = await request.post(new URL(form?.[1] as string, url).href, {
        form: { prompt: 'login', login, password: 'anything' },
        maxRedirects: 0,
      })
      url = new URL(posted.headers().location as string, url).href
    }
    throw new Error(`no way back from the provider: ${url}`)
  }

  const refusedWithoutSession = async (page: Page, status: number, text: string) => {
    expect(await heading(page)).toBe('Sign-in refused')
    expect(await bodyText(page)).toContain(text)
    expect(await sessionCookieOf(page.context(), dash.server)).toBeUndefined()
    expect(pathOf(page)).toBe('/account/sso/callback')
    expect(await page.title()).toBe('Sign-in refused · Tessera')
    expect(status).toBeGreaterThanOrEqual(400)
  }

  it('signs an invited member in through the provider, then by identity alone', async () => {
    const invited = await tessera(
      dash.server.env,
      'member',
      'add',
      'acme',
      'sam@acme.example',
      '--role',
      'developer',
    )
    expect(invited.role).toBe('developer')
    provider.people.set('sam', {
      email: 'Sam@Acme.example',
      email_verified: true,
      name: 'Sam Smith',
    })
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    await visit(page, `${dash.server.url}/account/sign-in?next=%2Faccount%2Fscopes`)
    expect(await link(page, 'Sign in with Acme ID').isVisible()).toBe(true)
    await inspect(page, 'sign-in-sso')
    await link(page, 'Sign in with Acme ID').click()
    await page.waitForURL((url) => url.href.startsWith(provider.issuer))
    const back = await providerLogin(page, 'sam')
    expect(back.response.status()).toBe(200)
    expect(pathOf(page)).toBe('/account/scopes')
    expect(await heading(page)).toBe('Scopes')
    expect(await sessionCookieOf(context, dash.server)).toBeDefined()
    const members = await tessera(dash.server.env, 'member', 'list', 'acme')
    expect(members).toEqual([
      expect.objectContaining({ login: 'acme', role: 'owner' }),
      expect.objectContaining({
        login: 'sam',
        email: 'sam@acme.example',
        name: 'Sam Smith',
        role: 'developer',
        sso: true,
      }),
    ])
    const audit = await tessera(
      dash.server.env,
      'audit',
      'acme',
      '--action',
      'signin.succeeded,member.added',
    )
    expect(audit.map((e: { action: string; actor: unknown }) => [e.action, e.actor])).toEqual([
      [
        'signin.succeeded',
        expect.objectContaining({ type: 'anonymous', login: 'sam', method: 'sso' }),
      ],
      ['member.added', expect.objectContaining({ type: 'anonymous', login: 'sam', method: 'sso' })],
    ])
    await click(page, 'Sign out')
    await context.close()

    // The provider's email changes: the identity (iss, sub) still names the same person.
    provider.people.set('sam', { email: 'sam@elsewhere.example', email_verified: true })
    const later = await newContext(dash.browser)
    const page2 = await later.newPage()
    await visit(page2, `${dash.server.url}/account/sign-in`)
    await navigation(page2, () => link(page2, 'Sign in with Acme ID').click())
    const again = await providerLogin(page2, 'sam')
    expect(again.response.status()).toBe(200)
    expect(await heading(page2)).toBe('Access tokens')
    await follow(page2, 'Settings')
    expect(await bodyText(page2)).toContain('single sign-on')
    await inspect(page2, 'settings-sso')
    await later.close()
  })

  it('refuses an unknown email and an unverified one, with a page and no session', async () => {
    provider.people.set('stranger', { email: 'nobody@else.example', email_verified: true })
    await tessera(dash.server.env, 'member', 'add', 'acme', 'una@acme.example', '--role', 'viewer')
    provider.people.set('una', { email: 'una@acme.example', email_verified: false })
    for (const [login, text] of [
      ['stranger', 'Nobody here has the email address nobody@else.example.'],
      ['una', 'Your provider has not verified your email address'],
    ] as const) {
      const context = await newContext(dash.browser)
      const page = await context.newPage()
      await visit(page, `${dash.server.url}/account/sign-in`)
      await navigation(page, () => link(page, 'Sign in with Acme ID').click())
      const answer = await providerLogin(page, login)
      expect(answer.response.status()).toBe(403)
      await refusedWithoutSession(page, answer.response.status(), text)
      await inspect(page, `sso-refused-${login}`)
      await context.close()
    }
  })

  it('refuses a wrong state, a replayed code and a bad nonce, with no session', async () => {
    provider.people.set('rita', { email: 'rita@acme.example', email_verified: true })
    await tessera(dash.server.env, 'member', 'add', 'acme', 'rita@acme.example', '--role', 'viewer')
    const context = await newContext(dash.browser)
    const page = await context.newPage()

    // A wrong state: the flow is used up, nobody is signed in.
    const back = await callbackUrl(page, 'rita')
    const forged = new URL(back)
    forged.searchParams.set('state', 'not-the-state-we-sent')
    const wrongState = await visit(page, forged.href)
    expect(wrongState.response.status()).toBe(400)
    await refusedWithoutSession(page, 400, 'could not be completed')

    // The right answer, once: signed in.
    const good = await callbackUrl(page, 'rita')
    const signedIn = await visit(page, good.href)
    expect(signedIn.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await click(page, 'Sign out')

    // The same answer again: that flow is gone.
    const replay = await visit(page, good.href)
    expect(replay.response.status()).toBe(400)
    await refusedWithoutSession(page, 400, 'expired or was already used')
    // ...and inside a new flow of this browser, the provider refuses the used code.
    const fresh = await authorizationUrl(page)
    const reused = new URL(good)
    reused.searchParams.set('state', fresh.searchParams.get('state') as string)
    const refused = await visit(page, reused.href)
    expect(refused.response.status()).toBe(400)
    await refusedWithoutSession(page, 400, 'could not be completed')

    // A nonce other than the one sent: the ID token does not match the flow.
    const auth = await authorizationUrl(page)
    auth.searchParams.set('nonce', 'a-nonce-somebody-else-chose')
    const swapped = await callbackUrl(page, 'rita', auth)
    const badNonce = await visit(page, swapped.href)
    expect(badNonce.response.status()).toBe(400)
    await refusedWithoutSession(page, 400, 'could not be completed')
    // Each refused for its own reason (openid-client's words, in the server's log).
    const reasons = dash.server
      .output()
      .split('\n')
      .filter((line) => line.includes('single sign-on refused'))
      .map((line) => JSON.parse(line).reason)
    expect(reasons).toEqual([
      'invalid response encountered',
      'server responded with an error in the response body',
      'unexpected JWT claim value encountered',
    ])
    await context.close()
  })

  it('never links the provider to a person who joined with a password and an unproven email', async () => {
    const made = await tessera(
      dash.server.env,
      'member',
      'add',
      'acme',
      'pia@acme.example',
      '--role',
      'viewer',
    )
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const invitation = dash.server.url + new URL(made.invitationUrl).pathname
    await visit(page, invitation)
    await field(page, 'Username').fill('pia')
    await field(page, 'New password').fill(password)
    await field(page, 'Confirm password').fill(password)
    expect((await click(page, 'Join acme')).statuses).toEqual([303, 200])
    await click(page, 'Sign out')
    expect((await signIn(page, dash.server, 'pia', password)).statuses).toEqual([303, 200])
    await click(page, 'Sign out')

    // Anyone can accept an invitation and type an email: the provider's word for the same
    // address does not make them the same person (the owner of another account could have).
    provider.people.set('pia-at-acme', { email: 'pia@acme.example', email_verified: true })
    await visit(page, `${dash.server.url}/account/sign-in`)
    await navigation(page, () => link(page, 'Sign in with Acme ID').click())
    const answer = await providerLogin(page, 'pia-at-acme')
    expect(answer.response.status()).toBe(403)
    await refusedWithoutSession(
      page,
      answer.response.status(),
      'Nobody here has proven the email address pia@acme.example.',
    )
    // Her password still signs her in: OIDC_ONLY refuses only people the provider signs in.
    const password_ = await signIn(page, dash.server, 'pia', password)
    expect(password_.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await context.close()
  })
})
