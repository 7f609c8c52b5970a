import path from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
import {
  alertText,
  bodyText,
  button,
  checkbox,
  click,
  expectAccessible,
  field,
  follow,
  heading,
  link,
  navigation,
  screenshot,
  signedIn,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const adminSecret = 'machines-admin-0123456789abcdefghijklmnopqrstuvwxyz'
const images = path.resolve(import.meta.dirname, '../../docs/images')
const desktop = { viewport: { width: 1280, height: 800 } }
const dayMs = 86_400_000

const region = (page: Page, name: string) => page.getByRole('region', { name, exact: true })
const text = async (scope: Locator) => (await scope.innerText()).replace(/\s+/g, ' ').trim()

/** A screenshot for the docs, 1280 px wide: the page from its title to the bottom of `to`. */
async function docsImage(page: Page, name: string, to: Locator) {
  const top = await page.getByRole('heading', { level: 1 }).boundingBox()
  const end = await to.boundingBox()
  if (top === null || end === null) throw new Error(`${name}: nothing to show`)
  const y = Math.max(0, top.y - 24)
  await page.screenshot({
    path: path.join(images, `${name}.png`),
    fullPage: true,
    clip: { x: 0, y, width: 1280, height: end.y + end.height + 24 - y },
  })
}

/**
 * Machines in the dashboard, by the names a person reads (docs/machines.md): a token's parent
 * and children on its page, and an owner adding and removing trust policies; axe on both pages,
 * and their screenshots for the docs.
 */
describe.skipIf(!available)('machines in the dashboard', () => {
  const dash = useDashboard({ env: { ADMIN_KEYS: `ops:${adminSecret}` } })

  it("shows a token's children on its page, and a child's parent on its own", async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'fleet', undefined, desktop)
    const writer = await tessera(
      dash.server.env,
      'token',
      'create',
      'fleet',
      '--scopes',
      'tokens:read,tokens:write,styles:read,fonts:read',
      '--note',
      'deploy bot',
    )
    const child = async (parent: string, body: Record<string, unknown>) => {
      const made = await api(
        dash.server,
        'POST',
        `/tokens/v2/fleet/${parent}/children`,
        writer.token,
        body,
      )
      expect(made.status).toBe(200)
      return made.body as { id: string }
    }
    const expires = new Date(Date.now() + 30 * dayMs).toISOString()
    const build = await child(writer.id, {
      note: 'build agent',
      scopes: ['styles:read', 'tokens:read'],
      expiresAt: expires,
    })
    await child(writer.id, { note: 'preview agent', scopes: ['fonts:read'] })
    await child(build.id, { note: 'tile cache', scopes: ['styles:read'] })
    const day = new Intl.DateTimeFormat('en-GB', {
      day: 'numeric',
      month: 'short',
      year: 'numeric',
      timeZone: 'UTC',
    }).format(Date.parse(expires))
    const family = region(page, 'Parent and children')
    const children = () =>
      family
        .getByRole('list', { name: 'Child tokens' })
        .getByRole('listitem')
        .evaluateAll((items) =>
          items.map((i) => (i as unknown as { innerText: string }).innerText.replace(/\s+/g, ' ')),
        )

    await page.reload()
    await follow(page, 'deploy bot')
    expect(await heading(page)).toBe('deploy bot')
    expect(await children()).toEqual([`build agent sk · Expires ${day}`, 'preview agent pk'])
    expect(await text(family)).toContain(
      'A child token is never wider than its parent and ends with it.',
    )
    await expectAccessible(page, 'token-parent')

    // In the middle of a family: its parent, and a child of its own (which ends when it does).
    await navigation(page, () => link(family, 'build agent').click())
    expect(await heading(page)).toBe('build agent')
    expect(await text(family)).toMatch(/^Parent and children Made under deploy bot Children /)
    expect(await children()).toEqual([`tile cache pk · Expires ${day}`])
    await expectAccessible(page, 'token-children')
    await docsImage(page, 'token-children', family)
    await navigation(page, () => link(family, 'deploy bot').click())
    expect(await heading(page)).toBe('deploy bot')
    await context.close()
  })

  it('lets an owner add a trust policy, refused first, see it, and remove it', async () => {
    const { context, page } = await signedIn(
      dash.browser,
      dash.server,
      'trusting',
      undefined,
      desktop,
    )
    await follow(page, 'Settings')
    await follow(page, 'Trust policies')
    expect(await heading(page)).toBe('Trust policies')
    expect(await text(region(page, 'Exchange URL'))).toContain(
      `${dash.server.url}/tokens/v2/trusting/exchange`,
    )
    await expectAccessible(page, 'trust-policies-empty')

    await field(page, 'Issuer').fill('https://token.actions.githubusercontent.com/')
    await field(page, 'Audience').fill('https://tessera.example')
    await field(page, 'Subject').fill('repo:acme/site:ref:refs/heads/main')
    await field(page, 'Claims').fill('repository_owner=acme\nworkflow=deploy')
    await checkbox(page, 'styles:read').check()
    await checkbox(page, 'tokens:read').check()
    await field(page, 'Max TTL (seconds)').fill('600')
    expect((await click(page, 'Add policy')).statuses).toEqual([422])
    expect(await alertText(page)).toBe(
      'The trust policy was not added.\n\nIssuer must be an https URL without a trailing slash, query or fragment.',
    )
    expect(await field(page, 'Subject').inputValue()).toBe('repo:acme/site:ref:refs/heads/main')
    expect(await checkbox(page, 'tokens:read').isChecked()).toBe(true)
    await expectAccessible(page, 'trust-policies-refused')

    await field(page, 'Issuer').fill('https://token.actions.githubusercontent.com')
    expect((await click(page, 'Add policy')).statuses).toEqual([303, 200])
    expect(await page.getByRole('status').first().innerText()).toBe('Trust policy added')
    expect(await text(region(page, 'Policy 1'))).toBe(
      'Policy 1 Issuer https://token.actions.githubusercontent.com Audience https://tessera.example Subject repo:acme/site:ref:refs/heads/main Claims repository_owner=acme workflow=deploy Scopes styles:read tokens:read Max TTL 600 seconds (10 minutes) Remove',
    )

    await field(page, 'Issuer').fill('https://gitlab.com')
    await field(page, 'Audience').fill('https://tessera.example')
    await field(page, 'Subject').fill('project_path:acme/maps:ref_type:branch:ref:*')
    await checkbox(page, 'fonts:read').check()
    expect((await click(page, 'Add policy')).statuses).toEqual([303, 200])
    expect(await text(region(page, 'Policy 2'))).toContain('Subject project_path:acme/maps')
    await expectAccessible(page, 'trust-policies')
    await docsImage(page, 'trust-policies', region(page, 'Add a trust policy'))
    await page.setViewportSize({ width: 390, height: 844 })
    await screenshot(page, 'trust-policies-phone')
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await page.setViewportSize(desktop.viewport)

    const read = async () =>
      (
        await context.request.get(`${dash.server.url}/admin/v1/accounts/trusting/trust-policies`, {
          headers: { authorization: `Bearer ${adminSecret}` },
        })
      ).json()
    expect((await read()).map((p: { issuer: string }) => p.issuer)).toEqual([
      'https://token.actions.githubusercontent.com',
      'https://gitlab.com',
    ])
    const removed = await navigation(page, () => button(region(page, 'Policy 1'), 'Remove').click())
    expect(removed.statuses).toEqual([303, 200])
    expect(await bodyText(page)).toContain('Trust policy removed')
    expect(await region(page, 'Policy 2').count()).toBe(0)
    expect(await text(region(page, 'Policy 1'))).toContain('Issuer https://gitlab.com')
    expect((await read()).map((p: { issuer: string }) => p.issuer)).toEqual(['https://gitlab.com'])
    await context.close()
  })
})
