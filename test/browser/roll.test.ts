import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ServerProcess, startServer, tessera } from '../e2e/server.js'
import { browserAvailable, launchBrowser } from './browser.js'
import {
  bodyText,
  checkbox,
  click,
  field,
  follow,
  heading,
  inspect,
  retrieveCode,
  signedIn,
  tokenNotes,
} from './dashboard.js'

const available = browserAvailable()

/** Rolling a token from its page: the new string once, the old one until the chosen time. */
describe.skipIf(!available)('rolling a token in the dashboard', () => {
  let server: ServerProcess
  let browser: Browser

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([startServer(), launchBrowser()])
  })
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  it('rolls a secret token now, and a public one with the old string kept for an hour', async () => {
    const { page, context, account } = await signedIn(browser, server, 'roller')
    await follow(page, 'Create a token')
    await field(page, 'Note').fill('backend')
    await checkbox(page, 'tokens:write').check()
    await click(page, 'Create token')
    const old = await field(page, 'New token').inputValue()
    await follow(page, 'Token settings')
    await inspect(page, 'token-roll')
    expect((await click(page, 'Roll token')).statuses).toEqual([200])
    expect(await heading(page)).toBe('Token created')
    expect(await bodyText(page)).toContain('Token rolled. The old token has stopped working.')
    const rolled = await field(page, 'New token').inputValue()
    expect(rolled).toMatch(/^sk\./)
    expect(rolled).not.toBe(old)
    expect(await retrieveCode(server, old)).toBe('TokenRevoked')
    expect(await retrieveCode(server, rolled)).toBe('TokenValid')

    await follow(page, 'Back to access tokens')
    expect(await tokenNotes(page)).toEqual(['Default public token', 'backend'])
    await follow(page, 'Default public token')
    await field(page, 'The old token stops working').selectOption('1h')
    expect((await click(page, 'Roll token')).statuses).toEqual([200])
    expect(await bodyText(page)).toMatch(
      /The old token works until \d{4}-\d\d-\d\d \d\d:\d\d UTC\./,
    )
    const newDefault = await field(page, 'New token').inputValue()
    expect(await retrieveCode(server, newDefault)).toBe('TokenValid')
    expect(await retrieveCode(server, account.defaultToken.token)).toBe('TokenValid')
    const list = await tessera(server.env, 'audit', 'roller', '--action', 'token.rolled')
    expect(list.map((e: { actor: { login?: string; method?: string } }) => e.actor.login)).toEqual([
      'roller',
      'roller',
    ])
    await context.close()
  })
})
