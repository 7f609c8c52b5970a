import type { BrowserContext, Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { browserAvailable } from './browser.js'
import {
  accountWithPassword,
  bodyText,
  button,
  expectPageHeaders,
  field,
  formOf,
  heading,
  newContext,
  postForm,
  signIn,
  type Visit,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/**
 * Sign-in throttling (DASHBOARD.md section 5). The counts live in the server process (SQLite
 * mode, no Redis), so every test starts a server of its own.
 */
describe.skipIf(!available)('sign-in throttling', () => {
  const dash = useDashboard({ server: 'test' })

  /**
   * Posts sign-ins with the fields of the sign-in form, as the browser would: the attempts whose
   * page matters go through the page itself; these only need to count.
   */
  async function poster(context: BrowserContext) {
    const page = await context.newPage()
    await visit(page, `${dash.server.url}/account/sign-in`)
    const names = await Promise.all(
      ['Username', 'Password'].map((label) => field(page, label).getAttribute('name')),
    )
    const form = await formOf(button(page, 'Sign in'))
    await page.close()
    return async (username: string, password: string) => {
      const values = new Map([
        [names[0], username],
        [names[1], password],
      ])
      const fields = form.fields.map(([k, v]): [string, string] => [k, values.get(k) ?? v])
      const answer = await postForm(context, form.action, fields, { Origin: dash.server.url })
      return answer.status()
    }
  }

  async function expectThrottled(page: Page, answer: Visit) {
    expect(answer.statuses).toEqual([429])
    const headers = await answer.response.allHeaders()
    expectPageHeaders(headers, '429')
    const retryAfter = headers['retry-after'] ?? ''
    expect(retryAfter).toMatch(/^\d+$/)
    expect(Number(retryAfter)).toBeGreaterThan(0)
    expect(Number(retryAfter)).toBeLessThanOrEqual(15 * 60)
    const text = await bodyText(page)
    // It says when to retry (a number of minutes or a time of day), not whether the password
    // was right.
    expect(text).toMatch(/\d/)
    expect(text).not.toContain('Wrong username or password')
  }

  it('answers 429 with Retry-After after 5 failures for one username, even to the right password', async () => {
    await accountWithPassword(dash.browser, dash.server, 'target', 'the real password')
    await accountWithPassword(dash.browser, dash.server, 'bystander', 'bystander password')
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const fail = await poster(context)
    for (let i = 1; i <= 4; i++) {
      await expect(fail('target', `guess number ${i}`), `failure ${i}`).resolves.toBe(401)
    }
    const fifth = await signIn(page, dash.server, 'target', 'guess number 5')
    expect(fifth.statuses).toEqual([401])
    expect(await bodyText(page)).toContain('Wrong username or password')
    const blocked = await signIn(page, dash.server, 'target', 'the real password')
    await expectThrottled(page, blocked)
    expect(await heading(page)).not.toBe('Access tokens')
    await expect(context.cookies()).resolves.toEqual([])

    // The count is per username: another account signs in from the same address.
    const other = await signIn(page, dash.server, 'bystander', 'bystander password')
    expect(other.statuses).toEqual([303, 200])
    expect(await heading(page)).toBe('Access tokens')
    await context.close()
  })

  it('answers 429 after 20 failures from one address spread over usernames', async () => {
    await accountWithPassword(dash.browser, dash.server, 'victim', 'the victim password')
    const context = await newContext(dash.browser)
    const page = await context.newPage()
    const fail = await poster(context)
    // 10 usernames, 2 failures each: never 5 for one name, 20 for the address.
    for (let i = 0; i < 20; i++) {
      const username = i < 2 ? 'victim' : `stranger${i % 10}`
      await expect(fail(username, 'a wrong password'), `failure ${i + 1}`).resolves.toBe(401)
    }
    const blocked = await signIn(page, dash.server, 'victim', 'the victim password')
    await expectThrottled(page, blocked)
    await expect(context.cookies()).resolves.toEqual([])
    await context.close()
  }, 60_000)
})
