import { beforeAll, describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { browserAvailable } from './browser.js'
import {
  type Account,
  bodyText,
  button,
  checkbox,
  click,
  createAccount,
  expectPageHeaders,
  field,
  follow,
  heading,
  link,
  pathOf,
  retrieveCode,
  rowTexts,
  setPassword,
  setupLink,
  signIn,
  tokenId,
  tokenNotes,
  tokenRow,
  tokenRows,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/**
 * An account holder's first day, in one browser context: each step starts where the previous
 * one left the page, as a person would go.
 */
describe.skipIf(!available)('the account holder journey', () => {
  const dash = useDashboard({ page: true })
  let account: Account
  const password = 'first password 1'
  const newPassword = 'second password 2'
  let pk = { id: '', token: '' }
  let sk = { id: '', token: '' }

  beforeAll(async () => {
    account = await createAccount(dash.server, 'alice')
  })

  it('opens the setup link, sets a password and lands signed in on the tokens page', async () => {
    const opened = await visit(dash.page, setupLink(dash.server, account.setupUrl))
    expect(opened.statuses).toEqual([200])
    expect(await heading(dash.page)).toBe('Set your password')
    const set = await setPassword(dash.page, dash.server, account.setupUrl, password)
    expect(set.statuses).toEqual([303, 200])
    expect(pathOf(dash.page)).toBe('/account')
    expect(await heading(dash.page)).toBe('Access tokens')
    for (const name of ['Access tokens', 'Scopes', 'Settings']) {
      await expect(link(dash.page, name).isVisible(), `link ${name}`).resolves.toBe(true)
    }
    await expect(button(dash.page, 'Sign out').isVisible()).resolves.toBe(true)
  })

  it('signs out, then signs in again with the password', async () => {
    const out = await click(dash.page, 'Sign out')
    expect(out.first.request().method()).toBe('POST')
    expect(await heading(dash.page)).toBe('Sign in')
    const back = await signIn(dash.page, dash.server, 'alice', password)
    expect(back.statuses).toEqual([303, 200])
    expect(pathOf(dash.page)).toBe('/account')
    expect(await heading(dash.page)).toBe('Access tokens')
  })

  it('shows the default public token first, with its pk string and a Copy button', async () => {
    await expect(tokenRows(dash.page).count()).resolves.toBe(1)
    const row = tokenRow(dash.page, 'Default public token')
    await expect(row.count()).resolves.toBe(1)
    await expect(link(row, 'Default public token').getAttribute('href')).resolves.toBe(
      `/account/tokens/${account.defaultToken.id}`,
    )
    await expect(row.locator('code').innerText()).resolves.toBe(account.defaultToken.token)
    await expect(button(row, 'Copy').count()).resolves.toBe(1)
    await expect(tokenNotes(dash.page)).resolves.toEqual(['Default public token'])
    const [cells] = await rowTexts(row)
    expect(cells).toContain('pk')
  })

  it('creates a pk with public scopes and an allowed URL', async () => {
    await follow(dash.page, 'Create a token')
    expect(pathOf(dash.page)).toBe('/account/tokens/new')
    expect(await heading(dash.page)).toBe('Create a token')
    const publicScopes = dash.page.getByRole('group', { name: 'Public scopes', exact: true })
    const secretScopes = dash.page.getByRole('group', { name: 'Secret scopes', exact: true })
    await expect(checkbox(publicScopes, 'styles:read').count()).resolves.toBe(1)
    await expect(checkbox(secretScopes, 'tokens:read').count()).resolves.toBe(1)
    await expect(checkbox(publicScopes, 'tokens:read').count()).resolves.toBe(0)
    // The name is the id; the description is tied to the box with aria-describedby.
    const described = await checkbox(dash.page, 'styles:read').getAttribute('aria-describedby')
    const descriptions = await Promise.all(
      (described ?? '').split(/\s+/).map((id) => dash.page.locator(`[id="${id}"]`).innerText()),
    )
    expect(descriptions.join(' ')).toContain('Read styles')

    await field(dash.page, 'Note').fill('website')
    await checkbox(dash.page, 'styles:read').check()
    await checkbox(dash.page, 'fonts:read').check()
    await field(dash.page, 'Allowed URLs').fill('https://example.com\nmaps.example.org')
    const created = await click(dash.page, 'Create token')
    expect(created.statuses).toEqual([200])
    expectPageHeaders(await created.response.allHeaders(), 'reveal', { noStore: true })
    expect(await heading(dash.page)).toBe('Token created')
    const value = await field(dash.page, 'New token').inputValue()
    expect(value).toMatch(/^pk\.[A-Za-z0-9]+\.[A-Za-z0-9_-]{22}$/)
    await expect(field(dash.page, 'New token').getAttribute('readonly')).resolves.not.toBeNull()
    await expect(button(dash.page, 'Copy').count()).resolves.toBe(1)
    expect(await bodyText(dash.page)).not.toContain('will not be shown again')

    const retrieved = await api(dash.server, 'GET', '/tokens/v2', value)
    expect(retrieved.body).toMatchObject({
      code: 'TokenValid',
      token: { usage: 'pk', user: 'alice' },
    })
    pk = { id: retrieved.body.token.authorization, token: value }
  })

  it('creates an sk with tokens:read whose string is shown once, never on the tokens page', async () => {
    await visit(dash.page, `${dash.server.url}/account/tokens/new`)
    await field(dash.page, 'Note').fill('automation')
    await checkbox(dash.page, 'tokens:read').check()
    await checkbox(dash.page, 'tokens:write').check()
    await checkbox(dash.page, 'scopes:list').check()
    const created = await click(dash.page, 'Create token')
    expect(created.statuses).toEqual([200])
    expectPageHeaders(await created.response.allHeaders(), 'reveal', { noStore: true })
    expect(await heading(dash.page)).toBe('Token created')
    const value = await field(dash.page, 'New token').inputValue()
    expect(value).toMatch(/^sk\./)
    expect(await bodyText(dash.page)).toContain('will not be shown again')
    const retrieved = await api(dash.server, 'GET', '/tokens/v2', value)
    expect(retrieved.body).toMatchObject({ code: 'TokenValid', token: { usage: 'sk' } })
    sk = { id: retrieved.body.token.authorization, token: value }

    await follow(dash.page, 'Access tokens')
    expect(await heading(dash.page)).toBe('Access tokens')
    await expect(tokenNotes(dash.page)).resolves.toEqual([
      'Default public token',
      'website',
      'automation',
    ])
    const rows = await rowTexts(tokenRows(dash.page))
    expect(rows[1]).toContain('pk')
    expect(rows[1]?.join(' ')).toContain('https://example.com')
    expect(rows[1]?.join(' ')).toContain('maps.example.org')
    expect(rows[2]).toContain('sk')
    expect(rows[2]?.join(' ')).toContain('tokens:read')
    const row = tokenRow(dash.page, 'automation')
    await expect(row.locator('code').count()).resolves.toBe(0)
    expect(await dash.page.content()).not.toContain(value)
    await expect(tokenRow(dash.page, 'website').locator('code').innerText()).resolves.toBe(pk.token)
    await expect(tokenId(dash.page, 'automation')).resolves.toBe(sk.id)
  })

  it('edits the pk (note and scopes) and the API sees the change at once', async () => {
    await follow(dash.page, 'website')
    expect(pathOf(dash.page)).toBe(`/account/tokens/${pk.id}`)
    expect(await heading(dash.page)).toBe('website')
    await expect(field(dash.page, 'Note').inputValue()).resolves.toBe('website')
    await expect(checkbox(dash.page, 'styles:read').isChecked()).resolves.toBe(true)
    await expect(checkbox(dash.page, 'fonts:read').isChecked()).resolves.toBe(true)
    await expect(button(dash.page, 'Delete token').count()).resolves.toBe(1)

    await field(dash.page, 'Note').fill('website (renamed)')
    await checkbox(dash.page, 'fonts:read').uncheck()
    await checkbox(dash.page, 'datasets:read').check()
    const saved = await click(dash.page, 'Save changes')
    expect(saved.statuses).toEqual([303, 200])
    expect(pathOf(dash.page)).toBe(`/account/tokens/${pk.id}`)
    expect(await bodyText(dash.page)).toContain('Changes saved')
    expect(await heading(dash.page)).toBe('website (renamed)')
    await expect(field(dash.page, 'Note').inputValue()).resolves.toBe('website (renamed)')
    await expect(checkbox(dash.page, 'fonts:read').isChecked()).resolves.toBe(false)
    await expect(checkbox(dash.page, 'datasets:read').isChecked()).resolves.toBe(true)

    const listed = await api(dash.server, 'GET', '/tokens/v2/alice', sk.token)
    expect(listed.status).toBe(200)
    const token = listed.body.find((t: { id: string }) => t.id === pk.id)
    expect(token).toMatchObject({ note: 'website (renamed)', usage: 'pk', token: pk.token })
    expect([...token.scopes].sort()).toEqual(['datasets:read', 'styles:read'])
  })

  it('has no Delete token button on the default token', async () => {
    await follow(dash.page, 'Access tokens')
    await follow(dash.page, 'Default public token')
    expect(pathOf(dash.page)).toBe(`/account/tokens/${account.defaultToken.id}`)
    expect(await heading(dash.page)).toBe('Default public token')
    await expect(button(dash.page, 'Save changes').count()).resolves.toBe(1)
    await expect(button(dash.page, 'Delete token').count()).resolves.toBe(0)
  })

  it('deletes the pk after confirmation, and the API calls its string revoked', async () => {
    await follow(dash.page, 'Access tokens')
    await follow(dash.page, 'website (renamed)')
    const asked = await click(dash.page, 'Delete token')
    expect(asked.statuses.at(-1)).toBe(200)
    expect(pathOf(dash.page)).toBe(`/account/tokens/${pk.id}/delete`)
    expect(await heading(dash.page)).toBe('Delete this token?')
    await expect(retrieveCode(dash.server, pk.token)).resolves.toBe('TokenValid')
    const deleted = await click(dash.page, 'Delete')
    expect(deleted.statuses).toEqual([303, 200])
    expect(pathOf(dash.page)).toBe('/account')
    await expect(tokenRow(dash.page, 'website (renamed)').count()).resolves.toBe(0)
    await expect(retrieveCode(dash.server, pk.token)).resolves.toBe('TokenRevoked')
  })

  it('makes a temporary token that the API calls valid', async () => {
    await follow(dash.page, 'Create a temporary token')
    expect(pathOf(dash.page)).toBe('/account/temporary')
    expect(await heading(dash.page)).toBe('Create a temporary token')
    await checkbox(dash.page, 'tokens:read').check()
    await checkbox(dash.page, 'styles:read').check()
    await field(dash.page, 'Expires in (minutes)').fill('10')
    const created = await click(dash.page, 'Create temporary token')
    expect(created.statuses.at(-1)).toBe(200)
    expect(await heading(dash.page)).toBe('Token created')
    const value = await field(dash.page, 'New token').inputValue()
    expect(value).toMatch(/^tk\./)
    const retrieved = await api(dash.server, 'GET', '/tokens/v2', value)
    expect(retrieved.body.code).toBe('TokenValid')
    expect(retrieved.body.token).toMatchObject({ usage: 'tk', user: 'alice' })
    expect([...retrieved.body.token.scopes].sort()).toEqual(['styles:read', 'tokens:read'])
    const minutes = (Date.parse(retrieved.body.token.expires) - Date.now()) / 60_000
    expect(minutes).toBeGreaterThan(8)
    expect(minutes).toBeLessThanOrEqual(10)
  })

  it('reads the scopes page: every scope of the account, described, public or secret', async () => {
    await follow(dash.page, 'Scopes')
    expect(pathOf(dash.page)).toBe('/account/scopes')
    expect(await heading(dash.page)).toBe('Scopes')
    const scopes = await api(dash.server, 'GET', '/scopes/v1/alice', sk.token)
    expect(scopes.status).toBe(200)
    const rows = await rowTexts(dash.page.getByRole('row'))
    const shown = rows.filter((cells) => cells.includes('public') || cells.includes('secret'))
    const expected = (scopes.body as { id: string; description: string; public?: boolean }[]).map(
      (s) => [s.id, s.description, s.public ? 'public' : 'secret'],
    )
    expect(shown.map((cells) => cells.slice(0, 3)).sort()).toEqual(expected.sort())
  })

  it('changes the password: the new one signs in, the old one no longer does', async () => {
    await follow(dash.page, 'Settings')
    expect(pathOf(dash.page)).toBe('/account/settings')
    expect(await heading(dash.page)).toBe('Settings')
    expect(await bodyText(dash.page)).toContain(account.plan)
    await field(dash.page, 'Current password').fill(password)
    await field(dash.page, 'New password').fill(newPassword)
    const changed = await click(dash.page, 'Change password')
    expect(changed.statuses).toEqual([303, 200])
    expect(pathOf(dash.page)).toBe('/account/settings')
    expect(await bodyText(dash.page)).toContain('Password changed')

    await click(dash.page, 'Sign out')
    const old = await signIn(dash.page, dash.server, 'alice', password)
    expect(old.statuses).toEqual([401])
    expect(await bodyText(dash.page)).toContain('Wrong username or password')
    const fresh = await signIn(dash.page, dash.server, 'alice', newPassword)
    expect(fresh.statuses).toEqual([303, 200])
    expect(await heading(dash.page)).toBe('Access tokens')
  })

  it('signs out: the pages ask to sign in again', async () => {
    const out = await click(dash.page, 'Sign out')
    expect(out.statuses.at(-1)).toBe(200)
    expect(await heading(dash.page)).toBe('Sign in')
    await visit(dash.page, `${dash.server.url}/account`)
    expect(pathOf(dash.page)).toBe('/account/sign-in')
    expect(await heading(dash.page)).toBe('Sign in')
  })
})
