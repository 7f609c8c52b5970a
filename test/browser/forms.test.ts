import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
import {
  alertText,
  bodyText,
  checkbox,
  click,
  createAccount,
  expectPageHeaders,
  field,
  follow,
  heading,
  link,
  newContext,
  pathOf,
  setPassword,
  signedIn,
  signIn,
  tokenNotes,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/** A rule broken in a form: 422, the contract's message next to the form, what was typed kept. */
describe.skipIf(!available)('forms of the dashboard', () => {
  // The paging test creates 100 tokens through the API in a few seconds.
  const dash = useDashboard({ env: { RATE_LIMIT_PER_MINUTE: '100000' } })

  async function expectFormError(page: Page, status: number, message: string) {
    expect(status).toBe(422)
    expect(await alertText(page)).toContain(message)
    await expect(page.locator('form[novalidate]').count()).resolves.toBeGreaterThan(0)
  }

  /** An sk of the account made with the CLI, to read what the API sees. */
  const reader = async (username: string) =>
    (
      await tessera(
        dash.server.env,
        'token',
        'create',
        username,
        '--scopes',
        'tokens:read,tokens:write',
        '--note',
        'cli',
      )
    ).token as string
  const listed = async (username: string, token: string) =>
    (await api(dash.server, 'GET', `/tokens/v2/${username}`, token)).body as {
      id: string
      note: string
      scopes: string[]
      allowedUrls?: string[]
    }[]

  it('refuses a bad allowed URL on create with 422, keeps what was typed, creates nothing', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'formurl')
    const sk = await reader('formurl')
    await visit(page, `${dash.server.url}/account/tokens/new`)
    await field(page, 'Note').fill('kept note')
    await checkbox(page, 'styles:read').check()
    await field(page, 'Allowed URLs').fill('https://example.com\nnot a url')
    const sent = await click(page, 'Create token')
    await expectFormError(page, sent.response.status(), 'resources are invalid')
    expectPageHeaders(await sent.response.allHeaders(), 'form error page')
    expect(await heading(page)).toBe('Create a token')
    await expect(field(page, 'Note').inputValue()).resolves.toBe('kept note')
    await expect(checkbox(page, 'styles:read').isChecked()).resolves.toBe(true)
    await expect(field(page, 'Allowed URLs').inputValue()).resolves.toBe(
      'https://example.com\nnot a url',
    )
    expect((await listed('formurl', sk)).map((t) => t.note)).not.toContain('kept note')
    await context.close()
  })

  it('refuses a secret scope on a pk in an update with 422 and changes nothing', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'formpk')
    const sk = await reader('formpk')
    await visit(page, `${dash.server.url}/account/tokens/new`)
    await field(page, 'Note').fill('public one')
    await checkbox(page, 'styles:read').check()
    await click(page, 'Create token')
    await visit(page, `${dash.server.url}/account`)
    await follow(page, 'public one')
    const tokenUrl = page.url()
    await field(page, 'Note').fill('renamed in vain')
    await checkbox(page, 'tokens:write').check()
    const sent = await click(page, 'Save changes')
    await expectFormError(page, sent.response.status(), 'scopes are invalid')
    await expect(field(page, 'Note').inputValue()).resolves.toBe('renamed in vain')
    await expect(checkbox(page, 'tokens:write').isChecked()).resolves.toBe(true)
    const token = (await listed('formpk', sk)).find((t) => t.note === 'public one')
    expect(token?.scopes).toEqual(['styles:read'])
    await visit(page, tokenUrl)
    expect(await heading(page)).toBe('public one')
    await expect(checkbox(page, 'tokens:write').isChecked()).resolves.toBe(false)
    await context.close()
  })

  it('refuses scopes on a token created without scopes with 422', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'formbare')
    const sk = await reader('formbare')
    // The form asks for a scope; the API makes a token without.
    const bare = await api(dash.server, 'POST', '/tokens/v2/formbare', sk, { note: 'bare' })
    expect(bare.status).toBe(200)
    await visit(page, `${dash.server.url}/account`)
    await follow(page, 'bare')
    await checkbox(page, 'styles:read').check()
    const sent = await click(page, 'Save changes')
    await expectFormError(page, sent.response.status(), 'scopes are invalid')
    await expect(field(page, 'Note').inputValue()).resolves.toBe('bare')
    await expect(checkbox(page, 'styles:read').isChecked()).resolves.toBe(true)
    expect((await listed('formbare', sk)).find((t) => t.note === 'bare')?.scopes).toEqual([])
    await context.close()
  })

  it('refuses a temporary expiry of 0 and of 61 minutes with the contract messages', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'formtemp')
    for (const [minutes, message] of [
      ['0', 'expires is in the past'],
      ['61', 'expires is more than one hour in the future'],
    ] as const) {
      await visit(page, `${dash.server.url}/account/temporary`)
      await checkbox(page, 'styles:read').check()
      await field(page, 'Expires in (minutes)').fill(minutes)
      const sent = await click(page, 'Create temporary token')
      await expectFormError(page, sent.response.status(), message)
      expect(await heading(page)).toBe('Create a temporary token')
      await expect(field(page, 'Expires in (minutes)').inputValue()).resolves.toBe(minutes)
      await expect(checkbox(page, 'styles:read').isChecked()).resolves.toBe(true)
      await expect(page.getByLabel('New token', { exact: true }).count()).resolves.toBe(0)
    }
    await context.close()
  })

  it('refuses a short, a too long and a mismatched password on setup, then accepts 12 characters', async () => {
    const account = await createAccount(dash.server, 'formsetup')
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    for (const [password, confirmation] of [
      ['eleven char', 'eleven char'],
      ['x'.repeat(257), 'x'.repeat(257)],
      ['twelve chars', 'twelve charz'],
    ] as const) {
      const sent = await setPassword(page, dash.server, account.setupUrl, password, confirmation)
      expect(sent.statuses, `${password.length} / ${confirmation}`).toEqual([422])
      expectPageHeaders(await sent.response.allHeaders(), 'setup refused')
      expect(await heading(page)).toBe('Set your password')
      await expect(page.getByRole('alert').count()).resolves.toBe(1)
    }
    const accepted = await setPassword(page, dash.server, account.setupUrl, 'twelve chars')
    expect(accepted.statuses).toEqual([303, 200])
    expect(pathOf(page)).toBe('/account')
    await click(page, 'Sign out')
    const again = await signIn(page, dash.server, 'formsetup', 'twelve chars')
    expect(again.statuses).toEqual([303, 200])
    await context.close()
  })

  it('offers the scopes of the plan and of the features, and names both in settings', async () => {
    const account = await createAccount(
      dash.server,
      'formplan',
      '--plan',
      'pro',
      '--feature',
      'navigation',
    )
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    await setPassword(page, dash.server, account.setupUrl, 'plan and features')
    await visit(page, `${dash.server.url}/account/tokens/new`)
    const publicScopes = page.getByRole('group', { name: 'Public scopes', exact: true })
    const secretScopes = page.getByRole('group', { name: 'Secret scopes', exact: true })
    await expect(checkbox(publicScopes, 'navigation:read').count()).resolves.toBe(1)
    await expect(checkbox(secretScopes, 'user:write').count()).resolves.toBe(1)
    await expect(checkbox(secretScopes, 'analytics:read').count()).resolves.toBe(1)
    await visit(page, `${dash.server.url}/account/settings`)
    const text = await bodyText(page)
    expect(text).toMatch(/\bpro\b/)
    expect(text).toMatch(/\bnavigation\b/)

    // A standard account is offered neither.
    const standard = await signedIn(dash.browser, dash.server, 'formstandard')
    await visit(standard.page, `${dash.server.url}/account/tokens/new`)
    for (const scope of ['navigation:read', 'user:write', 'analytics:read']) {
      await expect(checkbox(standard.page, scope).count(), scope).resolves.toBe(0)
    }
    await Promise.all([context.close(), standard.context.close()])
  })

  it('refuses a wrong current password and a short new one in settings', async () => {
    const { context, page, password } = await signedIn(dash.browser, dash.server, 'formsettings')
    await visit(page, `${dash.server.url}/account/settings`)
    await field(page, 'Current password').fill('not the password')
    await field(page, 'New password').fill('a good new password')
    const wrong = await click(page, 'Change password')
    expect(wrong.statuses).toEqual([422])
    expect(await alertText(page)).toContain('Current password is wrong')
    expect(await heading(page)).toBe('Settings')

    await field(page, 'Current password').fill(password)
    await field(page, 'New password').fill('too short')
    const short = await click(page, 'Change password')
    expect(short.statuses).toEqual([422])
    await expect(page.getByRole('alert').count()).resolves.toBe(1)

    await click(page, 'Sign out')
    const old = await signIn(page, dash.server, 'formsettings', password)
    expect(old.statuses).toEqual([303, 200])
    expect(await bodyText(page)).not.toContain('Wrong username or password')
    await context.close()
  })

  it('pages the tokens 100 at a time with Next page and Previous page', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'formpages')
    const sk = await reader('formpages')
    for (let i = 0; i < 100; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          api(dash.server, 'POST', '/tokens/v2/formpages', sk, {
            note: `n${String(i + j).padStart(3, '0')}`,
          }),
        ),
      )
    }
    // The default token, the CLI's sk and 100 more: 102 tokens, two pages.
    await visit(page, `${dash.server.url}/account`)
    const first = await tokenNotes(page)
    expect(first).toHaveLength(100)
    expect(first[0]).toBe('Default public token')
    await expect(link(page, 'Previous page').count()).resolves.toBe(0)
    await follow(page, 'Next page')
    expect(await heading(page)).toBe('Access tokens')
    const second = await tokenNotes(page)
    expect(second).toHaveLength(2)
    await expect(link(page, 'Next page').count()).resolves.toBe(0)
    expect(new Set([...first, ...second]).size).toBe(102)
    await follow(page, 'Previous page')
    await expect(tokenNotes(page)).resolves.toEqual(first)
    await context.close()
  })
})
