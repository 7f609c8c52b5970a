import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { adminEnv } from './admin-client.js'
import { DashboardClient } from './dashboard-client.js'

/** The Usage page's "Refused by rate limit": rate_limited split by the limit's name. */

const password = 'correct horse battery staple'
const minute = 60_000
const day = 24 * 60 * minute

let h: Harness
let owner: DashboardClient

const entities: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&#39;': "'" }
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(amp|lt|gt|#39);/g, (e) => entities[e] ?? e)
    .replace(/\s+/g, ' ')
    .trim()

/** The cells of each row (head and body) of the table of class `kind`, as text. */
function rowsOf(body: string, kind: string): string[][] {
  const table = new RegExp(`<table class="${kind}">([\\s\\S]*?)</table>`).exec(body)?.[1] ?? ''
  return [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...(row[1] ?? '').matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => text(c[1] ?? '')),
  )
}

beforeEach(async () => {
  h = await harness(adminEnv, { accountsCreated: T0 - 60 * day })
  owner = new DashboardClient(h.app)
  const link = await h.ctx.holders.invite('alice', cliActor)
  const done = await owner.post(`/account/setup/${link}`, { password, confirm: password })
  expect(done).toMatchObject({ status: 303, location: '/account' })
})
afterEach(() => h.close())

describe('the Usage page', () => {
  it('lists what each named limit refused in the period, the most first', async () => {
    const a = h.alice.defaultToken.id
    h.clock.now = T0 - 10 * day
    h.ctx.usage.countLimitedAs('alice', a, 'hourly', 9)
    h.clock.now = T0 + 10 * minute
    h.ctx.usage.countLimitedAs('alice', a, 'burst', 1_204)
    h.ctx.usage.countLimitedAs('alice', '', 'burst', 3)
    h.ctx.usage.countLimitedAs('alice', a, 'requests', 7)
    h.ctx.usage.countLimitedAs('bob', '', 'requests', 50)
    h.clock.now = T0 + 20 * minute
    await h.ctx.usage.flush()
    const page = await owner.get('/account/usage')
    expect(page.status).toBe(200)
    expect(page.body).toContain('<h2 id="limited-heading">Refused by rate limit</h2>')
    expect(rowsOf(page.body, 'limited')).toEqual([
      ['Limit', 'Refused'],
      ['burst', '1,207'],
      ['requests', '7'],
    ])
    const month = await owner.get('/account/usage?period=30d')
    expect(rowsOf(month.body, 'limited')).toEqual([
      ['Limit', 'Refused'],
      ['burst', '1,207'],
      ['hourly', '9'],
      ['requests', '7'],
    ])
  })

  it('shows no such table when no limit refused anything', async () => {
    h.clock.now = T0 + 10 * minute
    h.ctx.usage.count('alice', h.alice.defaultToken.id, 0, 5)
    h.clock.now = T0 + 20 * minute
    await h.ctx.usage.flush()
    const page = await owner.get('/account/usage')
    expect(page.status).toBe(200)
    expect(page.body).not.toContain('Refused by rate limit')
    expect(page.body).not.toContain('<table class="limited">')
  })
})
