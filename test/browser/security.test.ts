import type { BrowserContext } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { browserAvailable } from './browser.js'
import {
  accountWithPassword,
  button,
  checkbox,
  click,
  cookieName,
  createAccount,
  evil,
  expectPageHeaders,
  field,
  follow,
  formOf,
  heading,
  link,
  newContext,
  pathAndQuery,
  postForm,
  refuseDialogs,
  retrieveCode,
  sessionCookieOf,
  setupLink,
  signedIn,
  signIn,
  tokenId,
  tokenRow,
  visit,
  withCsrf,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/** What DASHBOARD.md section 5 promises against an attacker. */
describe.skipIf(!available)('dashboard security', () => {
  const dash = useDashboard()

  const sessionCookie = (context: BrowserContext) => sessionCookieOf(context, dash.server)

  describe('session cookie', () => {
    it('is __Host-tessera_session with Secure, HttpOnly, SameSite=Lax, Path=/ and no Domain', async () => {
      await accountWithPassword(dash.browser, dash.server, 'cookie', 'cookie password')
      const context = await newContext(dash.browser)
      const page = await context.newPage()
      await visit(page, `${dash.server.url}/account/sign-in`)
      await field(page, 'Username').fill('cookie')
      await field(page, 'Password').fill('cookie password')
      const form = await formOf(button(page, 'Sign in'))
      const raw = await postForm(context, form.action, form.fields, { Origin: dash.server.url })
      expect(raw.status()).toBe(303)
      const cookies = raw
        .headersArray()
        .filter((h) => h.name.toLowerCase() === 'set-cookie')
        .map((h) => h.value)
      const session = cookies.filter((c) => c.startsWith(`${cookieName}=`))
      expect(session, cookies.join('\n')).toHaveLength(1)
      const [pair, ...attributes] = (session[0] as string).split(';').map((p) => p.trim())
      const value = (pair as string).slice(cookieName.length + 1)
      // At least 128 bits: 22 base64url characters or 32 hex digits.
      expect(value).toMatch(/^(?:[A-Za-z0-9_-]{22,}|[0-9a-f]{32,})$/)
      const lower = attributes.map((a) => a.toLowerCase())
      expect(lower).toContain('secure')
      expect(lower).toContain('httponly')
      expect(lower).toContain('samesite=lax')
      expect(lower).toContain('path=/')
      expect(lower.filter((a) => a.startsWith('domain'))).toEqual([])

      // Signing in again in the browser gives a new id, with the same flags in the jar.
      const signed = await signIn(page, dash.server, 'cookie', 'cookie password')
      expect(signed.statuses).toEqual([303, 200])
      const jar = await sessionCookie(context)
      expect(jar).toMatchObject({
        name: cookieName,
        domain: '127.0.0.1',
        path: '/',
        secure: true,
        httpOnly: true,
        sameSite: 'Lax',
      })
      expect(jar?.value).not.toBe(value)
      await context.close()
    })

    it('is void once signed out, even if replayed', async () => {
      const { context, page } = await signedIn(dash.browser, dash.server, 'replay')
      const before = await sessionCookie(context)
      expect(before).toBeDefined()
      await click(page, 'Sign out')
      expect(await heading(page)).toBe('Sign in')
      const thief = await newContext(dash.browser)
      await thief.addCookies([{ ...(before as NonNullable<typeof before>) }])
      const stolen = await thief.newPage()
      await visit(stolen, `${dash.server.url}/account`)
      expect(pathAndQuery(stolen.url())).toBe('/account/sign-in')
      await thief.close()
      await context.close()
    })

    it('never authorises an API route', async () => {
      const { context } = await signedIn(dash.browser, dash.server, 'cookieapi')
      const list = await context.request.get(`${dash.server.url}/tokens/v2/cookieapi`)
      expect(list.status()).toBe(401)
      expect(list.headers()['content-type']).toMatch(/^application\/json/)
      expect(await list.json()).toMatchObject({ message: 'Unauthorized' })
      const retrieve = await context.request.get(`${dash.server.url}/tokens/v2`)
      expect(retrieve.status()).toBe(422)
      expect(await retrieve.json()).toMatchObject({ message: 'access token is required' })
      await context.close()
    })
  })

  describe('forged requests', () => {
    it('refuses a form without or with a wrong CSRF token, or from another origin: 403, nothing created', async () => {
      const { context, page } = await signedIn(dash.browser, dash.server, 'csrfcreate')
      await visit(page, `${dash.server.url}/account/tokens/new`)
      await field(page, 'Note').fill('csrf probe')
      await checkbox(page, 'styles:read').check()
      const form = await formOf(button(page, 'Create token'))
      const csrf = form.fields.find(([k]) => k === '_csrf')?.[1] ?? ''
      expect(csrf.length, 'a hidden _csrf field in the form').toBeGreaterThan(0)
      const forgeries: [string, [string, string][], Record<string, string>][] = [
        ['no _csrf', withCsrf(form.fields), { Origin: dash.server.url }],
        [
          'wrong _csrf',
          withCsrf(form.fields, 'A'.repeat(csrf.length)),
          { Origin: dash.server.url },
        ],
        ['foreign Origin', form.fields, { Origin: evil }],
        ['foreign Referer, no Origin', form.fields, { Referer: `${evil}/page` }],
        ['neither Origin nor Referer', form.fields, {}],
      ]
      for (const [what, fields, headers] of forgeries) {
        const answer = await postForm(context, form.action, fields, headers)
        expect(answer.status(), what).toBe(403)
        expectPageHeaders(answer.headers(), `403 (${what})`)
        expect(await answer.text(), what).toMatch(/<html/i)
      }
      await visit(page, `${dash.server.url}/account`)
      await expect(tokenRow(page, 'csrf probe').count()).resolves.toBe(0)

      // The same form, sent properly, works: the refusals were about CSRF and origin alone.
      const sent = await postForm(context, form.action, form.fields, { Origin: dash.server.url })
      expect(sent.status()).toBe(200)
      await visit(page, `${dash.server.url}/account`)
      await expect(tokenRow(page, 'csrf probe').count()).resolves.toBe(1)
      await context.close()
    })

    it('refuses a forged delete and a forged sign out: the token and the session survive', async () => {
      const { context, page } = await signedIn(dash.browser, dash.server, 'csrfdelete')
      await visit(page, `${dash.server.url}/account/tokens/new`)
      await field(page, 'Note').fill('keep me')
      await checkbox(page, 'styles:read').check()
      await click(page, 'Create token')
      const token = await field(page, 'New token').inputValue()
      await visit(page, `${dash.server.url}/account`)
      const id = await tokenId(page, 'keep me')
      await visit(page, `${dash.server.url}/account/tokens/${id}/delete`)
      const form = await formOf(button(page, 'Delete'))
      for (const [what, fields, headers] of [
        ['no _csrf', withCsrf(form.fields), { Origin: dash.server.url }],
        ['wrong _csrf', withCsrf(form.fields, 'wrong'), { Origin: dash.server.url }],
        ['foreign Origin', form.fields, { Origin: evil }],
      ] as const) {
        const answer = await postForm(context, form.action, [...fields], headers)
        expect(answer.status(), what).toBe(403)
        expectPageHeaders(answer.headers(), `403 delete (${what})`)
      }
      await expect(retrieveCode(dash.server, token)).resolves.toBe('TokenValid')

      const signOut = await formOf(button(page, 'Sign out'))
      const refused = await postForm(context, signOut.action, signOut.fields, { Origin: evil })
      expect(refused.status()).toBe(403)
      const still = await visit(page, `${dash.server.url}/account`)
      expect(still.statuses).toEqual([200])
      expect(await heading(page)).toBe('Access tokens')
      await expect(tokenRow(page, 'keep me').count()).resolves.toBe(1)

      const deleted = await postForm(context, form.action, form.fields, { Origin: dash.server.url })
      expect(deleted.status()).toBe(303)
      await expect(retrieveCode(dash.server, token)).resolves.toBe('TokenRevoked')
      await context.close()
    })

    it('refuses sign-in and setup posted from another origin', async () => {
      await accountWithPassword(dash.browser, dash.server, 'originsignin', 'origin password')
      const context = await newContext(dash.browser)
      const page = await context.newPage()
      await visit(page, `${dash.server.url}/account/sign-in`)
      await field(page, 'Username').fill('originsignin')
      await field(page, 'Password').fill('origin password')
      const signInForm = await formOf(button(page, 'Sign in'))
      const refused = await postForm(context, signInForm.action, signInForm.fields, {
        Origin: evil,
      })
      expect(refused.status()).toBe(403)
      expectPageHeaders(refused.headers(), '403 sign-in')
      expect(refused.headers()['set-cookie'] ?? '').not.toContain(cookieName)
      await expect(sessionCookie(context)).resolves.toBeUndefined()

      const account = await createAccount(dash.server, 'originsetup')
      await visit(page, setupLink(dash.server, account.setupUrl))
      await field(page, 'New password').fill('origin setup password')
      await field(page, 'Confirm password').fill('origin setup password')
      const setupForm = await formOf(button(page, 'Set password'))
      const forged = await postForm(context, setupForm.action, setupForm.fields, { Origin: evil })
      expect(forged.status()).toBe(403)
      expectPageHeaders(forged.headers(), '403 setup')
      // The link was not used up.
      const again = await visit(page, setupLink(dash.server, account.setupUrl))
      expect(again.statuses).toEqual([200])
      expect(await heading(page)).toBe('Set your password')
      await context.close()
    })
  })

  it('shows what was typed as text and runs none of it', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'xss')
    const dialogs = refuseDialogs(page)
    const note = '<script>alert(1)</script>'
    const url = 'https://example.com/"><script>alert(2)</script>'

    await visit(page, `${dash.server.url}/account/tokens/new`)
    await field(page, 'Note').fill(`${note}<img src=x onerror=alert(3)>`)
    await field(page, 'Allowed URLs').fill(url)
    const first = await click(page, 'Create token')
    if (first.response.status() === 422) {
      // The URL rule refused it: the form shows both back, as text.
      await expect(field(page, 'Note').inputValue()).resolves.toBe(
        `${note}<img src=x onerror=alert(3)>`,
      )
      await expect(field(page, 'Allowed URLs').inputValue()).resolves.toBe(url)
    } else {
      expect(first.response.status()).toBe(200)
    }
    expect(await page.content()).not.toContain('<script>alert(')

    await visit(page, `${dash.server.url}/account/tokens/new`)
    await field(page, 'Note').fill(note)
    await checkbox(page, 'styles:read').check()
    expect((await click(page, 'Create token')).statuses).toEqual([200])
    await visit(page, `${dash.server.url}/account`)
    await expect(link(tokenRow(page, note), note).innerText()).resolves.toBe(note)
    expect(await page.content()).not.toContain('<script>alert(')
    await follow(page, note)
    expect(await heading(page)).toBe(note)
    await expect(field(page, 'Note').inputValue()).resolves.toBe(note)
    expect(await page.content()).not.toContain('<script>alert(')
    expect(dialogs).toEqual([])
    await context.close()
  })

  it('after sign-in goes back to the page asked for, never to another site', async () => {
    const holder = await signedIn(dash.browser, dash.server, 'nextuser')
    await holder.context.close()
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const asked = await visit(page, `${dash.server.url}/account/tokens/new`)
    expect([302, 303]).toContain(asked.statuses[0])
    expect(pathAndQuery(page.url())).toBe('/account/sign-in?next=%2Faccount%2Ftokens%2Fnew')
    await field(page, 'Username').fill('nextuser')
    await field(page, 'Password').fill(holder.password)
    await click(page, 'Sign in')
    expect(page.url()).toBe(`${dash.server.url}/account/tokens/new`)
    expect(await heading(page)).toBe('Create a token')
    await click(page, 'Sign out')

    const landed = await signIn(
      page,
      dash.server,
      'nextuser',
      holder.password,
      '?next=%2F%2Fevil.example',
    )
    expect(landed.statuses).toEqual([303, 200])
    expect(page.url()).toBe(`${dash.server.url}/account`)
    await click(page, 'Sign out')

    // The others through the sign-in form's own fields, reading where the answer points.
    for (const next of [
      'https://evil.example/',
      '/\\evil.example',
      '/%5Cevil.example',
      'javascript:alert(1)',
      'https://evil.example/account',
      '/account/../../evil',
      '/account\\@evil.example',
    ]) {
      await visit(page, `${dash.server.url}/account/sign-in?next=${encodeURIComponent(next)}`)
      await field(page, 'Username').fill('nextuser')
      await field(page, 'Password').fill(holder.password)
      const form = await formOf(button(page, 'Sign in'))
      const answer = await postForm(context, form.action, form.fields, { Origin: dash.server.url })
      expect(answer.status(), next).toBe(303)
      const location = new URL(answer.headers().location ?? '', dash.server.url).href
      expect(location, next).toBe(`${dash.server.url}/account`)
    }
    await context.close()
  })

  it('sends the security headers on every page, error pages included', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'headers')
    const pages: [string, number, boolean][] = [
      ['/account', 200, true],
      ['/account/tokens/new', 200, false],
      ['/account/temporary', 200, false],
      ['/account/scopes', 200, false],
      ['/account/settings', 200, false],
      ['/account/no-such-page', 404, false],
      ['/account/tokens/c000000000000000000000000', 404, false],
    ]
    await visit(page, `${dash.server.url}/account`)
    const defaultId = await tokenId(page, 'Default public token')
    pages.push([`/account/tokens/${defaultId}`, 200, true])
    for (const [route, status, noStore] of pages) {
      const seen = await visit(page, `${dash.server.url}${route}`)
      expect(seen.statuses, route).toEqual([status])
      expectPageHeaders(await seen.response.allHeaders(), route, { noStore })
      if (status !== 200) continue
      // Every signed-in page has the header of the dashboard.
      for (const name of ['Access tokens', 'Scopes', 'Settings']) {
        await expect(link(page, name).count(), `${route}: link ${name}`).resolves.toBe(1)
      }
      await expect(button(page, 'Sign out').count(), `${route}: Sign out`).resolves.toBe(1)
    }
    const signOut = await formOf(button(page, 'Sign out'))
    const forbidden = await postForm(context, signOut.action, withCsrf(signOut.fields), {
      Origin: dash.server.url,
    })
    expect(forbidden.status()).toBe(403)
    expectPageHeaders(forbidden.headers(), '403')

    const visitor = await newContext(dash.browser)
    const signedOut = await visitor.newPage()
    const signInPage = await visit(signedOut, `${dash.server.url}/account/sign-in`)
    expect(signInPage.statuses).toEqual([200])
    expectPageHeaders(await signInPage.response.allHeaders(), 'sign in')
    const account = await createAccount(dash.server, 'headers2')
    const setup = await visit(signedOut, setupLink(dash.server, account.setupUrl))
    expect(setup.statuses).toEqual([200])
    expectPageHeaders(await setup.response.allHeaders(), 'setup')
    await Promise.all([context.close(), visitor.close()])
  })

  it('redirects / to /account; API routes answer JSON, never HTML or a redirect', async () => {
    const context = await newContext(dash.browser)
    const root = await context.request.get(`${dash.server.url}/`, { maxRedirects: 0 })
    expect([301, 302, 303, 307, 308]).toContain(root.status())
    expect(new URL(root.headers().location ?? '', dash.server.url).href).toBe(
      `${dash.server.url}/account`,
    )
    for (const route of ['/tokens/v2/nobody', '/tokens/v2', '/scopes/v1/nobody']) {
      const answer = await context.request.get(`${dash.server.url}${route}`, {
        maxRedirects: 0,
        headers: { Accept: 'text/html' },
      })
      expect(answer.status(), route).toBeGreaterThanOrEqual(400)
      expect(answer.headers()['content-type'], route).toMatch(/^application\/json/)
    }
    await context.close()
  })

  it('answers 404 on /account/sign-up when sign-up is closed (the default)', async () => {
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const closed = await visit(page, `${dash.server.url}/account/sign-up`)
    expect(closed.statuses).toEqual([404])
    expectPageHeaders(await closed.response.allHeaders(), '404 sign-up')
    await expect(button(page, 'Create account').count()).resolves.toBe(0)
    await context.close()
  })
})
