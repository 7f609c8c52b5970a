import { describe, expect, it } from 'vitest'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
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
import { useDashboard } from './fixture.js'

const available = browserAvailable()

/** Rolling a token from its page: the new string once, the old one until the chosen time. */
describe.skipIf(!available)('rolling a token in the dashboard', () => {
  const dash = useDashboard()

  it('rolls a secret token now, and a public one with the old string kept for an hour', async () => {
    const { page, context, account } = await signedIn(dash.browser, dash.server, 'roller')
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
    expect(await retrieveCode(dash.server, old)).toBe('TokenRevoked')
    expect(await retrieveCode(dash.server, rolled)).toBe('TokenValid')

    await follow(page, 'Back to access tokens')
    expect(await tokenNotes(page)).toEqual(['Default public token', 'backend'])
    await follow(page, 'Default public token')
    await field(page, 'The old token stops working').selectOption('1h')
    expect((await click(page, 'Roll token')).statuses).toEqual([200])
    expect(await bodyText(page)).toMatch(
      /The old token works until \d{4}-\d\d-\d\d \d\d:\d\d UTC\./,
    )
    const newDefault = await field(page, 'New token').inputValue()
    expect(await retrieveCode(dash.server, newDefault)).toBe('TokenValid')
    expect(await retrieveCode(dash.server, account.defaultToken.token)).toBe('TokenValid')
    const list = await tessera(dash.server.env, 'audit', 'roller', '--action', 'token.rolled')
    expect(list.map((e: { actor: { login?: string; method?: string } }) => e.actor.login)).toEqual([
      'roller',
      'roller',
    ])
    await context.close()
  })
})
