import type { BrowserContext, Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
import {
  bodyText,
  button,
  checkbox,
  click,
  createAccount,
  expectPageHeaders,
  field,
  follow,
  formOf,
  heading,
  inspect,
  link,
  newContext,
  pathOf,
  postForm,
  sessionCookieOf,
  setPassword,
  signIn,
  tokenNotes,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const password = 'correct horse battery'
const adminKey = `k1:${'a'.repeat(43)}`
const platform = 'https://platform.example'

/** The people of an account in Chromium, by the accessible names of the pages. */
describe.skipIf(!available)('members, roles and portal links', () => {
  const dash = useDashboard({ env: { ADMIN_KEYS: adminKey, PORTAL_RETURN_ORIGINS: platform } })

  /** A new account whose holder is signed in (a context of its own). */
  const holder = async (username: string) => {
    const account = await createAccount(dash.server, username)
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    expect((await setPassword(page, dash.server, account.setupUrl, password)).statuses).toEqual([
      303, 200,
    ])
    return { account, context, page }
  }

  /** On the Members page, the owner makes an invitation link: its address on this server. */
  const invite = async (page: Page, email: string, role: string) => {
    await follow(page, 'Members')
    await field(page, 'Email').fill(email)
    await field(page, 'Role').selectOption(role)
    expect((await click(page, 'Create invitation link')).statuses).toEqual([200])
    const url = await field(page, 'Invitation link').inputValue()
    return dash.server.url + new URL(url).pathname
  }

  /** A new person joins with an invitation link: a context of their own, signed in. */
  const accept = async (url: string, login: string) => {
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    await visit(page, url)
    if (login === 'devon') await inspect(page, 'invitation')
    await field(page, 'Username').fill(login)
    await field(page, 'New password').fill(password)
    await field(page, 'Confirm password').fill(password)
    const joined = await click(page, await heading(page))
    expect(joined.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    return { context, page }
  }

  /** The forms of the page that post, sign-out aside: their actions. */
  const changingForms = (page: Page) =>
    page
      .locator('form[method="post"]')
      .evaluateAll((forms) =>
        forms
          .map((f) => (f as unknown as { getAttribute(n: string): string }).getAttribute('action'))
          .filter((a) => a !== '/account/sign-out'),
      )

  it('an owner invites a developer and a viewer; each gets exactly what the role allows', async () => {
    const owner = await holder('orbit')
    const devLink = await invite(owner.page, 'dev@orbit.example', 'developer')
    await inspect(owner.page, 'members-invitation-link')
    const viewerLink = await invite(owner.page, 'viewer@orbit.example', 'viewer')
    const dev = await accept(devLink, 'devon')
    const viewer = await accept(viewerLink, 'vera')

    // The developer creates a secret token.
    await follow(dev.page, 'Create a token')
    await field(dev.page, 'Note').fill('backend')
    await checkbox(dev.page, 'tokens:write').check()
    expect((await click(dev.page, 'Create token')).statuses).toEqual([200])
    const sk = await field(dev.page, 'New token').inputValue()
    expect(sk).toMatch(/^sk\./)
    expect(await button(dev.page, 'Create invitation link').count()).toBe(0)

    // The viewer reads every page, with no sk string and no form that changes anything.
    await visit(viewer.page, `${dash.server.url}/account`)
    expect(await tokenNotes(viewer.page)).toEqual(['Default public token', 'backend'])
    expect(await link(viewer.page, 'Create a token').count()).toBe(0)
    await inspect(viewer.page, 'viewer-tokens')
    for (const path of ['/account', '/account/scopes', '/account/activity', '/account/members']) {
      await visit(viewer.page, `${dash.server.url}${path}`)
      expect(await changingForms(viewer.page), path).toEqual([])
      expect(await viewer.page.content(), path).not.toContain(sk)
      expect(await bodyText(viewer.page), path).not.toMatch(/\bsk\.[A-Za-z0-9_-]{10}/)
    }
    await follow(viewer.page, 'Access tokens')
    await follow(viewer.page, 'backend')
    expect(await changingForms(viewer.page)).toEqual([])
    expect(await button(viewer.page, 'Save changes').count()).toBe(0)
    await inspect(viewer.page, 'viewer-token')

    // Forged POSTs with the viewer's own session and CSRF token: 403, nothing changed.
    await follow(viewer.page, 'Settings')
    const csrf = (await formOf(button(viewer.page, 'Sign out everywhere'))).fields.find(
      ([k]) => k === '_csrf',
    ) as [string, string]
    const headers = { origin: dash.server.url }
    const before = await tessera(
      dash.server.env,
      'audit',
      'orbit',
      '--action',
      'token.created,token.updated,token.deleted',
    )
    for (const [path, fields] of [
      [
        '/account/tokens/new',
        [
          ['note', 'x'],
          ['scopes', 'styles:read'],
        ],
      ],
      [
        '/account/temporary',
        [
          ['scopes', 'styles:read'],
          ['minutes', '5'],
        ],
      ],
      [
        '/account/members/invite',
        [
          ['email', 'x@orbit.example'],
          ['role', 'owner'],
        ],
      ],
      ['/account/members/vera/role', [['role', 'owner']]],
      ['/account/members/orbit/remove', []],
    ] as [string, [string, string][]][]) {
      const res = await postForm(
        viewer.context,
        `${dash.server.url}${path}`,
        [csrf, ...fields],
        headers,
      )
      expect(res.status(), path).toBe(403)
      expectPageHeaders(res.headers(), path)
    }
    expect(
      await tessera(
        dash.server.env,
        'audit',
        'orbit',
        '--action',
        'token.created,token.updated,token.deleted',
      ),
    ).toEqual(before)
    expect(
      (await tessera(dash.server.env, 'member', 'list', 'orbit')).map(
        (m: { login: string; role: string }) => [m.login, m.role],
      ),
    ).toEqual([
      ['orbit', 'owner'],
      ['devon', 'developer'],
      ['vera', 'viewer'],
    ])

    // Role change and removal end their sessions at once.
    await follow(owner.page, 'Members')
    await inspect(owner.page, 'members')
    await owner.page.getByLabel('Role of devon', { exact: true }).selectOption('viewer')
    expect((await click(owner.page, 'Change role of devon')).statuses).toEqual([303, 200])
    expect(await owner.page.getByRole('status').innerText()).toContain('Role changed')
    await visit(dev.page, `${dash.server.url}/account`)
    expect(await heading(dev.page)).toBe('Sign in')
    expect((await click(owner.page, 'Remove vera')).statuses).toEqual([303, 200])
    await visit(viewer.page, `${dash.server.url}/account/settings`)
    expect(await heading(viewer.page)).toBe('Sign in')
    expect(await sessionCookieOf(viewer.context, dash.server)).toBeUndefined()

    // The last owner stays.
    expect((await click(owner.page, 'Remove orbit')).statuses).toEqual([409])
    expect(await owner.page.getByRole('alert').innerText()).toContain(
      'An account must keep at least one owner.',
    )
    await inspect(owner.page, 'members-last-owner')
    for (const c of [owner.context, dev.context, viewer.context]) await c.close()
  })

  it('a person in two accounts picks one after signing in, and switches', async () => {
    const first = await holder('first')
    const second = await holder('second')
    const url = await invite(second.page, 'first@first.example', 'developer')
    await visit(first.page, url)
    expect(await heading(first.page)).toBe('Join second')
    await inspect(first.page, 'invitation-signed-in')
    expect((await click(first.page, 'Join second')).statuses).toEqual([303, 200])
    expect(await first.page.locator('.who').innerText()).toBe('second (first)')

    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const signedIn = await signIn(page, dash.server, 'first', password)
    expect(signedIn.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Choose an account')
    await inspect(page, 'choose-account')
    expect((await click(page, 'second')).statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    expect(await page.locator('.who').innerText()).toBe('second (first)')
    await follow(page, 'second')
    expect((await click(page, 'first')).statuses).toEqual([303, 200])
    expect(await page.locator('.who').innerText()).toBe('first')
    for (const c of [first.context, second.context, context]) await c.close()
  })

  it('a portal link lands signed in with its role, once; the second time it is 410', async () => {
    const owner = await holder('portal')
    await owner.context.close()
    const context: BrowserContext = await newContext(dash.browser)
    const make = async (role: string) => {
      const res = await context.request.post(
        `${dash.server.url}/admin/v1/accounts/portal/portal-links`,
        {
          headers: { authorization: `Bearer ${adminKey.slice(3)}` },
          data: { email: 'pat@platform.example', role, returnUrl: `${platform}/settings` },
        },
      )
      expect(res.status()).toBe(201)
      return dash.server.url + new URL((await res.json()).url).pathname
    }
    const url = await make('developer')
    const page = await context.newPage()
    const shown = await visit(page, url)
    expect(shown.statuses).toEqual([200])
    expect(shown.response.headers()['referrer-policy']).toBe('no-referrer')
    expect(await heading(page)).toBe('Manage your access tokens')
    expect(await link(page, 'Back to platform.example').getAttribute('href')).toBe(
      `${platform}/settings`,
    )
    await inspect(page, 'portal-link')
    const used = await click(page, 'Continue')
    expect(used.statuses).toEqual([303, 200])
    expect(pathOf(page)).toBe('/account')
    expect(await heading(page)).toBe('Access tokens')
    expect(await link(page, 'Create a token').isVisible()).toBe(true)
    expect(await link(page, 'Back to platform.example').isVisible()).toBe(true)

    const again = await newContext(dash.browser)
    const other = await again.newPage()
    const second = await visit(other, url)
    expect(second.statuses).toEqual([410])
    expect(await heading(other)).toBe('Link no longer valid')
    await inspect(other, 'portal-link-gone')
    await again.close()

    // A viewer's link: the same person, now a viewer.
    const viewerLink = await make('viewer')
    await visit(page, viewerLink)
    await click(page, 'Continue')
    expect(await link(page, 'Create a token').count()).toBe(0)
    await context.close()
  })
})
