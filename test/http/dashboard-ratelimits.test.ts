import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, harness } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { signedInHolder } from './dashboard-client.js'

/** Settings shows the rate limits in force on the account, read-only: name, limit, window. */
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()

let h: Harness
afterEach(() => h.close())

describe('the rate limits on Settings', () => {
  it('lists the limits in effect, the service’s and the account’s own', async () => {
    h = await harness(adminEnv)
    const b = await signedInHolder(h.app, h.ctx, 'alice', 'correct horse battery staple')
    const section = async () => {
      const page = await b.get('/account/settings')
      expect(page.status).toBe(200)
      return (
        /<section aria-labelledby="ratelimits-heading"[\s\S]*?<\/section>/.exec(page.body)?.[0] ??
        ''
      )
    }
    const rows = async () =>
      [...(await section()).matchAll(/<tr>[\s\S]*?<\/tr>/g)].map((m) => text(m[0]))
    expect(await section()).toContain('<h2 id="ratelimits-heading">Rate limits</h2>')
    expect(await section()).toContain(
      '<caption class="visually-hidden">Rate limits in effect on your account</caption>',
    )
    expect(await rows()).toEqual(['Name Limit Window', 'requests 100,000 1 minute'])
    const limits = [
      { name: 'requests', limit: 600, duration: 60_000 },
      { name: 'burst', limit: 20, duration: 1000 },
      { name: 'odd', limit: 7, duration: 1500 },
      { name: 'quarter', limit: 5, duration: 900_000 },
      { name: 'hourly', limit: 1, duration: 3_600_000 },
      { name: 'daily', limit: 100_000, duration: 86_400_000, cost: 2 },
    ]
    expect((await admin(h.app, 'PUT', '/accounts/alice/ratelimits', { limits })).status).toBe(200)
    expect(await rows()).toEqual([
      'Name Limit Window',
      'requests 600 1 minute',
      'burst 20 1 second',
      'odd 7 1.5 seconds',
      'quarter 5 15 minutes',
      'hourly 1 1 hour',
      'daily 100,000 1 day',
    ])
  })
})
