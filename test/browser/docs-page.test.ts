import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { browserAvailable } from './browser.js'
import { expectAccessible, newContext, screenshot, visit } from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/** What the page reported while loading: console errors, CSP violations, requests elsewhere. */
async function watch(page: Page, origin: string) {
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console: ${m.text()}`)
  })
  page.on('pageerror', (e) => problems.push(`error: ${e.message}`))
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`)
  })
  page.on('request', (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) {
      problems.push(`request to ${r.url()}`)
    }
  })
  await page.exposeFunction('reportViolation', (v: string) => problems.push(`CSP: ${v}`))
  // An init script runs outside the page's CSP; it only listens.
  await page.addInitScript(`document.addEventListener('securitypolicyviolation', (e) =>
    reportViolation(e.violatedDirective + ' blocked ' + e.blockedURI + ' at ' + e.sourceFile))`)
  return problems
}

describe.skipIf(!available)('the API reference at /docs', () => {
  const dash = useDashboard()

  it('renders the retrieve operation from /openapi.json, within its CSP', async () => {
    const context = await newContext(dash.browser, { viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const problems = await watch(page, dash.server.url)
    const { response } = await visit(page, `${dash.server.url}/docs`)
    expect(response.status()).toBe(200)
    expect(await page.title()).toBe('Tessera token API reference')

    const retrieve = page.getByRole('button', {
      name: /^GET\s*\/tokens\/v2\s*Retrieve and validate a token/,
    })
    await expect.poll(() => retrieve.count()).toBe(1)
    await retrieve.click()
    // Swagger UI names an operation by its operationId.
    const operation = page.locator('#operations-tokens-retrieveToken')
    await expect
      .poll(() => operation.getByRole('textbox', { name: 'access_token' }).count())
      .toBe(1)
    expect(await page.getByRole('heading', { name: /Tessera token API/ }).count()).toBe(1)

    await screenshot(page, 'docs')
    await expectAccessible(page, 'docs')
    // The document's server (PUBLIC_URL) in a list with a name; "Try it out" asks this page's
    // server, the one origin its CSP lets it reach, whatever PUBLIC_URL says.
    expect(await page.getByRole('combobox', { name: 'Server' }).count()).toBe(1)
    await operation.getByRole('button', { name: 'Try it out' }).click()
    await operation.getByRole('textbox', { name: 'access_token' }).fill('pk.not.a-token')
    await operation.getByRole('button', { name: 'Execute' }).click()
    await expect
      .poll(() =>
        operation.locator('.live-responses-table tbody .response-col_status').first().textContent(),
      )
      .toBe('200')
    expect(
      await operation.locator('.live-responses-table tbody .microlight').first().textContent(),
    ).toContain('TokenMalformed')

    expect(problems).toEqual([])
    await context.close()
  })
})
