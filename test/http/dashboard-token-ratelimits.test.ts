import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { type Harness, harness } from '../helpers.js'
import { type DashboardClient, signedInHolder } from './dashboard-client.js'

/** A token's page shows its own rate limits (the API's `ratelimits`), read-only. */
describe("a token's page and its own rate limits", () => {
  let h: Harness
  let browser: DashboardClient

  beforeEach(async () => {
    h = await harness()
    browser = await signedInHolder(h.app, h.ctx, 'alice', 'correct horse battery staple')
  })
  afterEach(() => h.close())

  const section = (body: string) =>
    /<section aria-labelledby="token-ratelimits-heading"[\s\S]*?<\/section>/.exec(body)?.[0]
  const rows = (body: string) =>
    [...(section(body) ?? '').matchAll(/<tr><th scope="row">([\s\S]*?)<\/tr>/g)].map((m) =>
      (m[1] as string).replace(/<[^>]+>/g, '|').replace(/\|+/g, '|'),
    )

  it('lists name, limit and window when it has some; the form keeps them', async () => {
    const holder = h.ctx.accounts.holder(h.alice)
    const ratelimits = [
      { name: 'burst', limit: 20, duration: 1000 },
      { name: 'daily', limit: 100_000, duration: 86_400_000, cost: 2 },
    ]
    const input = { note: 'limited', scopes: ['styles:read'], ratelimits }
    const token = await h.ctx.tokens.create(h.alice, holder, input, cliActor)
    const page = await browser.get(`/account/tokens/${token.id}`)
    expect(page.status).toBe(200)
    expect(section(page.body)).toContain('<h3 id="token-ratelimits-heading">Rate limits</h3>')
    expect(rows(page.body)).toEqual([
      '|burst|20|1 second|',
      '|daily|100,000 (a request counts 2)|1 day|',
    ])
    // No field of the form is about them: a save leaves them as they were.
    expect(page.body).not.toMatch(/name="ratelimits/)
    const saved = await browser.post(`/account/tokens/${token.id}`, {
      note: 'renamed',
      scopes: 'styles:read',
    })
    expect(saved.status).toBe(303)
    expect(await h.ctx.tokens.get(h.alice, token.id)).toMatchObject({ note: 'renamed', ratelimits })

    // A token without any: no such section.
    const plain = await browser.get(`/account/tokens/${h.alice.defaultToken.id}`)
    expect(plain.status).toBe(200)
    expect(section(plain.body)).toBeUndefined()
  })
})
