import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { type Outcome, outcomeIndex, outcomes } from '../../src/usage/outcomes.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { alertOf, DashboardClient, origin, titleOf } from './dashboard-client.js'

/**
 * The Usage page (verifications by outcome, the busiest and the most refused tokens, the CSV
 * download, the account's credits) and, on a token's page, its own series and credits.
 */

const password = 'correct horse battery staple'
const minute = 60_000
const day = 24 * 60 * minute

let h: Harness
let owner: DashboardClient
let website = { id: '', token: '' }

/** A browser whose holder set the password with a setup link, on the tokens page. */
async function holderOf(username: string) {
  const b = new DashboardClient(h.app)
  const link = await h.ctx.holders.invite(username, cliActor)
  const done = await b.post(`/account/setup/${link}`, { password, confirm: password })
  expect(done).toMatchObject({ status: 303, location: '/account' })
  await b.get('/account')
  return b
}

/** The owner invites a member with `role`, who joins in a browser of their own. */
async function member(role: 'developer' | 'viewer', login: string) {
  const made = await owner.post('/account/members/invite', { email: `${login}@example.com`, role })
  const path = /\/account\/invitations\/[A-Za-z0-9_-]{43}/.exec(made.body)?.[0] as string
  const b = new DashboardClient(h.app)
  await b.get(path)
  expect((await b.post(path, { login, password, confirm: password })).status).toBe(303)
  await b.get('/account')
  return b
}

const entities: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&#39;': "'" }
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(amp|lt|gt|#39);/g, (e) => entities[e] ?? e)
    .replace(/\s+/g, ' ')
    .trim()

/** The cells of each row (head and body) of the first table of class `kind`, as text. */
function rowsOf(body: string, kind: string, nth = 0): string[][] {
  const tables = [...body.matchAll(new RegExp(`<table class="${kind}">([\\s\\S]*?)</table>`, 'g'))]
  const table = tables[nth]?.[1] ?? ''
  return [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...(row[1] ?? '').matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => text(c[1] ?? '')),
  )
}

/** The attributes of every piece of the chart's bars, in order. */
const piecesOf = (body: string) => {
  const svg = /<svg class="usage-chart"[^>]*>[\s\S]*?<\/svg>/.exec(body)?.[0] ?? ''
  return [...svg.matchAll(/<rect ([^>]*)>/g)].map((m) =>
    Object.fromEntries([...(m[1] ?? '').matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1], a[2]])),
  )
}

const count = (account: string, token: string, outcome: Outcome, n: number) =>
  h.ctx.usage.count(account, token, outcomeIndex[outcome], n)

/**
 * Ten days ago: website 40 valid, 10 rate limited. Today 12:10: website 986 valid, 3 revoked; a
 * temporary token 7 valid; a token since deleted 4 valid; bob's 50 (not alice's). 13:20: website
 * 500 valid, 2 expired. The clock is left at 13:30.
 */
async function countSome() {
  h.clock.now = T0 - 10 * day
  count('alice', website.id, 'valid', 40)
  count('alice', website.id, 'rate_limited', 10)
  await h.ctx.usage.flush()
  h.clock.now = T0 + 10 * minute
  const alice = await h.ctx.accounts.find('alice')
  const old = await h.token('alice', [], { note: 'old' })
  count('alice', website.id, 'valid', 986)
  count('alice', website.id, 'revoked', 3)
  count('alice', '', 'valid', 7)
  count('alice', old.id, 'valid', 4)
  count('bob', '', 'valid', 50)
  await h.ctx.usage.flush()
  if (alice) await h.ctx.tokens.remove(alice, old.id, cliActor)
  h.clock.now = T0 + 80 * minute
  count('alice', website.id, 'valid', 500)
  count('alice', website.id, 'expired', 2)
  await h.ctx.usage.flush()
  h.clock.now = T0 + 90 * minute
  return old.id
}

beforeEach(async () => {
  // Accounts older than the history the tests count.
  h = await harness(adminEnv, { accountsCreated: T0 - 60 * day })
  owner = await holderOf('alice')
  website = await h.token('alice', ['styles:read'], { note: 'website' })
})
afterEach(() => h.close())

describe('the Usage page', () => {
  it('is linked from every signed-in page, and says when nothing was counted', async () => {
    for (const path of ['/account', '/account/scopes', '/account/settings', '/account/activity']) {
      expect((await owner.get(path)).body, path).toContain('<a href="/account/usage">Usage</a>')
    }
    const page = await owner.get('/account/usage')
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(titleOf(page.body)).toBe('Usage')
    expect(page.body).toContain('<a href="/account/usage" aria-current="page">Usage</a>')
    expect(page.body).toContain(
      '<nav class="periods" aria-label="Period"><a href="/account/usage?period=24h" aria-current="true">Last 24 hours</a> <a href="/account/usage?period=30d">Last 30 days</a></nav>',
    )
    expect(page.body).toContain(
      '<p class="usage-summary" id="usage-summary"><strong>0</strong> verifications in the last 24 hours.</p><p class="chart-empty">Nothing to chart: no verifications in the last 24 hours.</p>',
    )
    expect(page.body).not.toContain('<svg')
    expect(page.body).toContain('<p class="none">No token was used in the last 24 hours.</p>')
    expect(page.body).toContain('<p class="none">No token was refused in the last 24 hours.</p>')
    expect(page.body).toContain('<a href="/account/usage.csv?period=24h" download>Download CSV</a>')
    expect(page.body).toContain(
      '<p><strong>No credit limit</strong>: verifications are not metered.</p>',
    )
  })

  it('stacks the last 24 hours by outcome, hour by hour, with the figures as a table', async () => {
    await countSome()
    const page = await owner.get('/account/usage')
    expect(page.body).toContain(
      '<p class="usage-summary" id="usage-summary"><strong>1,502</strong> verifications in the last 24 hours: 1,497 valid, 5 refused.</p>',
    )
    expect(page.body).toContain(
      '<svg class="usage-chart" role="img" aria-label="Verifications by hour and outcome, last 24 hours" aria-describedby="usage-summary" viewBox="0 0 240 100" preserveAspectRatio="none" focusable="false">',
    )
    expect(page.body).not.toMatch(/\sstyle=/)
    // 21 Nov 14:00 is x 1, 22 Nov 12:00 x 221. A piece is at least 1 high: 3 refusals show.
    expect(piecesOf(page.body)).toEqual([
      {
        class: 'bar outcome-valid',
        x: '221',
        y: '1',
        width: '8',
        height: '99',
        'data-count': '997',
      },
      {
        class: 'bar outcome-revoked',
        x: '221',
        y: '0',
        width: '8',
        height: '1',
        'data-count': '3',
      },
      {
        class: 'bar outcome-valid',
        x: '231',
        y: '50',
        width: '8',
        height: '50',
        'data-count': '500',
      },
      {
        class: 'bar outcome-expired',
        x: '231',
        y: '49',
        width: '8',
        height: '1',
        'data-count': '2',
      },
    ])
    expect(page.body).toContain(
      '<g data-start="2026-11-22T12:00:00.000Z"><title>2026-11-22 12:00 UTC: 997 valid, 3 revoked</title>',
    )
    expect(page.body).toContain('<p class="chart-scale">Peak 1,000 an hour · times in UTC</p>')
    expect(text(/<ul class="legend">[\s\S]*?<\/ul>/.exec(page.body)?.[0] ?? '')).toBe(
      'Valid 1,497 Expired 2 Revoked 3',
    )
    const table = rowsOf(page.body, 'buckets')
    expect(page.body).toContain(
      '<caption>Verifications by hour and outcome, last 24 hours, oldest first</caption>',
    )
    expect(table[0]).toEqual(['Hour (UTC)', 'Valid', 'Expired', 'Revoked', 'Total'])
    expect(table.slice(1)).toHaveLength(24)
    expect(table[1]).toEqual(['2026-11-21 14:00', '0', '0', '0', '0'])
    expect(table.slice(-2)).toEqual([
      ['2026-11-22 12:00', '997', '0', '3', '1,000'],
      ['2026-11-22 13:00', '500', '2', '0', '502'],
    ])
  })

  it('lists the most used and the most refused tokens, each linked to its page', async () => {
    const old = await countSome()
    const page = await owner.get('/account/usage')
    expect(rowsOf(page.body, 'top-tokens', 0)).toEqual([
      ['Token', 'Total', 'Valid', 'Refused'],
      ['website', '1,491', '1,486', '5'],
      ['Temporary tokens', '7', '7', '0'],
      [`Deleted token ${old}`, '4', '4', '0'],
    ])
    expect(rowsOf(page.body, 'top-tokens', 1)).toEqual([
      ['Token', 'Refused', 'Why'],
      ['website', '5', 'Revoked 3, Expired 2'],
    ])
    expect(page.body).toContain(
      `<th scope="row"><a href="/account/tokens/${website.id}">website</a></th>`,
    )

    const month = await owner.get('/account/usage?period=30d')
    expect(month.body).toContain(
      '<a href="/account/usage?period=30d" aria-current="true">Last 30 days</a>',
    )
    expect(rowsOf(month.body, 'top-tokens', 1)).toEqual([
      ['Token', 'Refused', 'Why'],
      ['website', '15', 'Rate limited 10, Revoked 3, Expired 2'],
    ])
  })

  it('stacks the last 30 days by day', async () => {
    await countSome()
    const page = await owner.get('/account/usage?period=30d')
    expect(page.body).toContain(
      '<strong>1,552</strong> verifications in the last 30 days: 1,537 valid, 15 refused.</p>',
    )
    expect(page.body).toContain('aria-label="Verifications by day and outcome, last 30 days"')
    expect(page.body).toContain('viewBox="0 0 300 100"')
    const table = rowsOf(page.body, 'buckets')
    expect(table[0]).toEqual(['Day (UTC)', 'Valid', 'Expired', 'Revoked', 'Rate limited', 'Total'])
    expect(table.slice(1)).toHaveLength(30)
    expect(table[1]?.[0]).toBe('2026-10-24')
    expect(table.find((r) => r[0] === '2026-11-12')).toEqual([
      '2026-11-12',
      '40',
      '0',
      '0',
      '10',
      '50',
    ])
    expect(table.at(-1)).toEqual(['2026-11-22', '1,497', '2', '3', '0', '1,502'])
    expect(page.body).toContain('<a href="/account/usage.csv?period=30d" download>Download CSV</a>')
  })

  it('leaves out what a former account of the same name was counted', async () => {
    await countSome()
    // alice deleted and made again: ten days ago's counts and today's are the old alice's.
    await h.ctx.accounts.remove('alice', cliActor)
    // A deleted name rests an hour.
    h.clock.now = T0 + 4 * 60 * minute
    await h.ctx.accounts.create('alice', undefined, [], cliActor)
    const again = await holderOf('alice')
    const page = await again.get('/account/usage?period=30d')
    expect(page.body).toContain(
      '<p class="usage-summary" id="usage-summary"><strong>0</strong> verifications in the last 30 days.</p>',
    )
    const csv = await again.get('/account/usage.csv?period=30d')
    expect(csv.body.split('\r\n').filter((l) => /,[1-9]/.test(l))).toEqual([])
  })

  it('refuses a period it does not offer', async () => {
    for (const path of ['/account/usage?period=7d', '/account/usage.csv?period=1y']) {
      const page = await owner.get(path)
      expect(page.status, path).toBe(422)
      expect(text(page.body)).toContain(
        'There is no such period: choose the last 24 hours or the last 30 days.',
      )
    }
  })
})

describe('the CSV download', () => {
  const header =
    'start,valid,malformed,invalid,expired,revoked,rate_limited,url_not_allowed,ip_not_allowed,scope_missing,credits_exhausted'
  const zeros = ',0,0,0,0,0,0,0,0,0,0'

  /** Per column, the sum of the CSV's rows, as the admin API names them (zeros left out). */
  const columnSums = (csv: string) => {
    const sums: Record<string, number> = {}
    for (const line of csv.trim().split('\r\n').slice(1)) {
      line
        .split(',')
        .slice(1)
        .forEach((n, i) => {
          const name = outcomes[i] as string
          if (Number(n) > 0) sums[name] = (sums[name] ?? 0) + Number(n)
        })
    }
    return sums
  }

  it('writes a row per hour of the last 24 hours, zeros included, summing to the admin API totals', async () => {
    await countSome()
    const csv = await owner.get('/account/usage.csv')
    expect(csv.status).toBe(200)
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8')
    expect(csv.headers['content-disposition']).toBe(
      'attachment; filename="usage-alice-2026-11-21T1400Z.csv"',
    )
    const quiet = Array.from({ length: 22 }, (_, i) => {
      const start = new Date(Date.parse('2026-11-21T14:00:00.000Z') + i * 60 * minute)
      return `${start.toISOString()}${zeros}\r\n`
    })
    expect(csv.body).toBe(
      `${header}\r\n${quiet.join('')}2026-11-22T12:00:00.000Z,997,0,0,0,3,0,0,0,0,0\r\n2026-11-22T13:00:00.000Z,500,0,0,2,0,0,0,0,0,0\r\n`,
    )
    const api = await admin(
      h.app,
      'GET',
      '/accounts/alice/usage?from=2026-11-21T14:00:00.000Z&to=2026-11-22T14:00:00.000Z&resolution=hour',
    )
    expect(api.status).toBe(200)
    expect(columnSums(csv.body)).toEqual(api.body.totals)
    expect(api.body.totals).toEqual({ valid: 1497, expired: 2, revoked: 3 })
  })

  it('writes a row per day of the last 30 days, summing to the admin API totals', async () => {
    await countSome()
    const csv = await owner.get('/account/usage.csv?period=30d')
    expect(csv.headers['content-disposition']).toBe(
      'attachment; filename="usage-alice-2026-10-24.csv"',
    )
    const lines = csv.body.split('\r\n')
    expect(lines).toHaveLength(32)
    expect(lines[0]).toBe(header)
    expect(lines[1]).toBe(`2026-10-24T00:00:00.000Z${zeros}`)
    expect(lines[20]).toBe('2026-11-12T00:00:00.000Z,40,0,0,0,0,10,0,0,0,0')
    expect(lines[30]).toBe('2026-11-22T00:00:00.000Z,1497,0,0,2,3,0,0,0,0,0')
    expect(lines[31]).toBe('')
    const api = await admin(
      h.app,
      'GET',
      '/accounts/alice/usage?from=2026-10-24T00:00:00.000Z&to=2026-11-23T00:00:00.000Z&resolution=day',
    )
    expect(columnSums(csv.body)).toEqual(api.body.totals)
  })
})

describe("a token's page", () => {
  it('charts its own verifications by outcome, beside Last used', async () => {
    await countSome()
    await h.ctx.usage.flush()
    const page = await owner.get(`/account/tokens/${website.id}`)
    expect(page.body).toContain('<h3 id="usage-heading">Verifications</h3>')
    expect(page.body).toContain(
      '<strong>1,491</strong> verifications in the last 24 hours: 1,486 valid, 5 refused.</p>',
    )
    expect(page.body).toContain(
      `<a href="/account/tokens/${website.id}?period=30d">Last 30 days</a>`,
    )
    expect(piecesOf(page.body).map((p) => [p.class, p['data-count']])).toEqual([
      ['bar outcome-valid', '986'],
      ['bar outcome-revoked', '3'],
      ['bar outcome-valid', '500'],
      ['bar outcome-expired', '2'],
    ])
    expect(page.body).toMatch(/<dt>Last used<\/dt><dd><time datetime="2026-11-22T13:20:00.000Z">/)
    const month = await owner.get(`/account/tokens/${website.id}?period=30d`)
    expect(month.body).toContain(
      '<strong>1,541</strong> verifications in the last 30 days: 1,526 valid, 15 refused.</p>',
    )
    expect((await owner.get(`/account/tokens/${website.id}?period=all`)).status).toBe(422)
  })

  it('says so when the token was never verified', async () => {
    const page = await owner.get(`/account/tokens/${website.id}`)
    expect(page.body).toContain('<dt>Last used</dt><dd><span class="none">never used</span></dd>')
    expect(page.body).toContain('<strong>0</strong> verifications in the last 24 hours.</p>')
    expect(page.body).not.toContain('<svg')
  })
})

describe('credits in the dashboard', () => {
  const monthly = { remaining: '1000', refill: 'monthly', amount: '1000', day: '1' }
  const accountCredits = {
    remaining: 1000,
    refill: { interval: 'monthly' as const, amount: 1000, day: 1 },
  }
  /** The Credits card of a page. */
  const cardOf = (body: string) =>
    /<section aria-labelledby="credits-heading" class="card credits">[\s\S]*?<\/section>/.exec(
      body,
    )?.[0] ?? ''
  const provider = '<p class="hint">Your provider sets the account’s credits.</p>'

  it("shows the account's credits to every member, owners too, read-only", async () => {
    const none = cardOf((await owner.get('/account/usage')).body)
    expect(none).toContain(
      '<p><strong>No credit limit</strong>: verifications are not metered.</p>',
    )
    expect(none).toContain(provider)
    expect(none).not.toContain('<form')
    await h.ctx.credits.set({ account: 'alice' }, accountCredits, cliActor)
    const browsers = [owner, await member('developer', 'dana'), await member('viewer', 'vic')]
    for (const b of browsers) {
      const page = await b.get('/account/usage')
      expect(page.status).toBe(200)
      const card = cardOf(page.body)
      expect(card).toContain('<h2 id="credits-heading">Credits</h2>')
      expect(card).toContain('<dt>Remaining</dt><dd><strong>1,000</strong> of 1,000</dd>')
      expect(text(/<dt>Refill<\/dt><dd>[\s\S]*?<\/dd>/.exec(card)?.[0] ?? '')).toBe(
        'Refill set to 1,000 every month on day 1 at 00:00 UTC; next 2026-12-01 00:00 UTC',
      )
      expect(text(/<dt>Since<\/dt><dd>[\s\S]*?<\/dd>/.exec(card)?.[0] ?? '')).toBe(
        'Since 2026-11-22 12:00 UTC',
      )
      expect(card).toContain(provider)
      expect(card).not.toContain('<form')
      expect(page.body).not.toContain('/account/usage/credits')
      expect(page.body).not.toContain('Save credits')
      expect(page.body).not.toContain('Remove credit limit')
      expect(page.body).not.toContain('Credits remaining')
    }
  })

  it("says when the account's credits come from its plan", async () => {
    await h.close()
    const source = readFileSync(
      path.join(import.meta.dirname, '../../catalog/default.yaml'),
      'utf8',
    )
    const commented = '    # credits: { amount: 10000, refill: monthly, day: 1 }'
    expect(source).toContain(commented)
    const file = path.join(tmpdir(), `tessera-dash-plan-${process.pid}-${Date.now()}.yaml`)
    writeFileSync(file, source.replace(commented, '    credits: { amount: 5000, refill: daily }'))
    try {
      h = await harness({ ...adminEnv, SCOPES_FILE: file })
    } finally {
      rmSync(file)
    }
    await h.ctx.accounts.create('carol', 'pro', [], cliActor)
    const carol = await holderOf('carol')
    const card = cardOf((await carol.get('/account/usage')).body)
    expect(card).toContain('<dt>Remaining</dt><dd><strong>5,000</strong> of 5,000</dd>')
    expect(text(/<dt>Since<\/dt><dd>[\s\S]*?<\/dd>/.exec(card)?.[0] ?? '')).toBe(
      'Since 2026-11-22 12:00 UTC (from your plan)',
    )
    expect(card).toContain(provider)
    expect(card).not.toContain('<form')
  })

  it('answers a POST to the account credits routes, which do not exist, as any unknown page', async () => {
    const unknown = await owner.post('/account/no-such-page', monthly)
    expect(unknown.status).toBe(404)
    expect(titleOf(unknown.body)).toBe('Page not found')
    expect(text(unknown.body)).toContain('There is no page at this address.')
    const forged = await owner.post('/account/no-such-page', monthly, {
      origin: 'https://evil.example',
    })
    expect(forged.status).toBe(403)
    const expectNothingChanged = async (path: string) => {
      const before = await h.ctx.credits.get({ account: 'alice' })
      const changes = { username: 'alice', actions: ['credits.changed' as const], limit: 10 }
      const events = await h.ctx.audit.list(changes)
      for (const fields of [monthly, { ...monthly, remaining: '5' }, {}]) {
        const answer = await owner.post(path, fields)
        expect(answer.status, path).toBe(404)
        expect(answer.headers['content-type']).toBe('text/html; charset=utf-8')
        expect(answer.body, path).toBe(unknown.body)
        const refused = await owner.post(path, fields, { origin: 'https://evil.example' })
        expect(refused.status, path).toBe(403)
        expect(refused.body, path).toBe(forged.body)
      }
      expect(await h.ctx.credits.get({ account: 'alice' }), path).toEqual(before)
      expect(await h.ctx.audit.list(changes), path).toEqual(events)
    }
    // Without credits: none are made.
    for (const path of ['/account/usage/credits', '/account/usage/credits/remove']) {
      await expectNothingChanged(path)
    }
    expect(await h.ctx.credits.get({ account: 'alice' })).toBeUndefined()
    // With credits (the operator's): neither changed nor removed.
    await h.ctx.credits.set({ account: 'alice' }, accountCredits, cliActor)
    for (const path of ['/account/usage/credits', '/account/usage/credits/remove']) {
      await expectNothingChanged(path)
    }
    expect(await h.ctx.credits.get({ account: 'alice' })).toMatchObject({
      remaining: 1000,
      refill: { interval: 'monthly', amount: 1000, day: 1 },
    })
  })

  it("lets an owner set, show and remove a token's own credits on its page", async () => {
    const daily = { remaining: '50', refill: 'daily', amount: '100', day: '' }
    const set = await owner.post(`/account/tokens/${website.id}/credits`, daily)
    expect(set).toMatchObject({
      status: 303,
      location: `/account/tokens/${website.id}?credits=saved`,
    })
    const target = { account: 'alice', tokenId: website.id }
    expect(await h.ctx.credits.get(target)).toMatchObject({
      remaining: 50,
      refill: { interval: 'daily', amount: 100 },
      nextRefill: '2026-11-23T00:00:00.000Z',
    })
    expect(await h.ctx.credits.get({ account: 'alice' })).toBeUndefined()
    const page = await owner.get(`/account/tokens/${website.id}?credits=saved`)
    expect(page.body).toContain('<p role="status" class="notice">Credits saved</p>')
    expect(page.body).toContain('<dt>Remaining</dt><dd><strong>50</strong> of 50</dd>')
    expect(page.body).toContain('<option value="daily" selected>Daily</option>')
    expect(page.body).toContain(
      '<button type="submit" class="secondary">Remove credit limit</button>',
    )
    const removed = await owner.post(`/account/tokens/${website.id}/credits/remove`, {})
    expect(removed.location).toBe(`/account/tokens/${website.id}?credits=removed`)
    expect(await h.ctx.credits.get(target)).toBeUndefined()
    const after = await owner.get(`/account/tokens/${website.id}?credits=removed`)
    expect(after.body).toContain('<p role="status" class="notice">Credit limit removed</p>')
    expect(after.body).not.toContain('Remove credit limit')
    // A notice is only ever one of the page's own: not a property every object has.
    for (const crafted of ['constructor', '__proto__', 'toString']) {
      for (const path of [
        `/account/tokens/${website.id}?credits=${crafted}`,
        `/account/settings?done=${crafted}&refused=${crafted}`,
        `/account/members?done=${crafted}`,
      ]) {
        const odd = await owner.get(path)
        expect(odd.status, path).toBe(200)
        expect(odd.body, path).not.toContain('class="notice"')
        expect(odd.body, path).not.toMatch(/native code|\[object Object\]/)
      }
    }
    // Removed already (another tab): what was asked for holds.
    const again = await owner.post(`/account/tokens/${website.id}/credits/remove`, {})
    expect(again.location).toBe(`/account/tokens/${website.id}?credits=removed`)
    // Another account's token is not found here.
    const bobs = await h.token('bob', [], { note: 'bob' })
    expect((await owner.post(`/account/tokens/${bobs.id}/credits`, daily)).status).toBe(404)
    expect(await h.ctx.credits.get({ account: 'bob', tokenId: bobs.id })).toBeUndefined()
  })

  it('shows the token form again with what is wrong, keeping what was typed, and changes nothing', async () => {
    await owner.post(`/account/tokens/${website.id}/credits`, monthly)
    const wrong: [Record<string, string>, string][] = [
      [{ ...monthly, remaining: '-5' }, 'Credits remaining must be a whole number, 0 or more.'],
      [{ ...monthly, remaining: '1.5' }, 'Credits remaining must be a whole number, 0 or more.'],
      [{ ...monthly, remaining: '' }, 'Credits remaining must be a whole number, 0 or more.'],
      [{ ...monthly, refill: 'weekly' }, 'Refill must be No refill, Daily or Monthly.'],
      [{ ...monthly, amount: '0' }, 'Refill amount must be a whole number, 1 or more.'],
      [{ ...monthly, day: '31' }, 'Refill day must be a day of the month from 1 to 28.'],
      [{ ...monthly, day: '0' }, 'Refill day must be a day of the month from 1 to 28.'],
      [{ ...monthly, day: 'x' }, 'Refill day must be a day of the month from 1 to 28.'],
    ]
    const target = { account: 'alice', tokenId: website.id }
    const before = await h.ctx.credits.get(target)
    expect(before).toMatchObject({ remaining: 1000 })
    for (const [fields, message] of wrong) {
      const page = await owner.post(`/account/tokens/${website.id}/credits`, fields)
      expect(page.status, message).toBe(422)
      expect(alertOf(page.body)).toBe(message)
      expect(titleOf(page.body)).toBe('website')
      expect(page.body).toContain(
        `name="remaining" type="number" inputmode="numeric" min="0" step="1" value="${fields.remaining}"`,
      )
    }
    expect(await h.ctx.credits.get(target)).toEqual(before)
    expect(await h.ctx.credits.get({ account: 'alice' })).toBeUndefined()
  })

  it("shows a token's credits to developers and viewers, who cannot change them", async () => {
    await owner.post(`/account/tokens/${website.id}/credits`, monthly)
    await h.ctx.credits.set({ account: 'alice' }, accountCredits, cliActor)
    for (const [role, login] of [
      ['developer', 'dana'],
      ['viewer', 'vic'],
    ] as const) {
      const b = await member(role, login)
      const token = cardOf((await b.get(`/account/tokens/${website.id}`)).body)
      expect(token).toContain('<dt>Remaining</dt><dd><strong>1,000</strong> of 1,000</dd>')
      expect(token).toContain(
        '<p class="hint">Owners of the account change this token’s credits.</p>',
      )
      expect(token).not.toContain('<form')
      const refusal = `Your role in alice is ${role}: this needs an owner.`
      for (const path of [
        `/account/tokens/${website.id}/credits`,
        `/account/tokens/${website.id}/credits/remove`,
      ]) {
        const answer = await b.post(path, { ...monthly, remaining: '5' })
        expect(answer.status, path).toBe(403)
        expect(text(answer.body)).toContain(refusal)
      }
      // The account's credits: no route for anyone.
      for (const path of ['/account/usage/credits', '/account/usage/credits/remove']) {
        const answer = await b.post(path, { ...monthly, remaining: '5' })
        expect(answer.status, path).toBe(404)
        expect(titleOf(answer.body)).toBe('Page not found')
      }
    }
    expect(await h.ctx.credits.get({ account: 'alice' })).toMatchObject({ remaining: 1000 })
    expect(await h.ctx.credits.get({ account: 'alice', tokenId: website.id })).toMatchObject({
      remaining: 1000,
    })
  })

  it('refuses a change without the CSRF token or from another origin', async () => {
    const action = `/account/tokens/${website.id}/credits`
    const forged = [
      () => owner.post(action, { ...monthly, _csrf: '' }),
      () => owner.post(action, { ...monthly, _csrf: 'forged' }),
      () => owner.post(action, monthly, { origin: 'https://evil.example' }),
      () => owner.post(`${action}/remove`, { _csrf: 'forged' }),
    ]
    for (const send of forged) expect((await send()).status).toBe(403)
    expect(await h.ctx.credits.get({ account: 'alice', tokenId: website.id })).toBeUndefined()
    await owner.post(action, monthly)
    expect((await owner.post(`${action}/remove`, { _csrf: 'forged' })).status).toBe(403)
    const remove = await owner.post(`${action}/remove`, {}, { origin: 'https://evil.example' })
    expect(remove.status).toBe(403)
    expect(await h.ctx.credits.get({ account: 'alice', tokenId: website.id })).toMatchObject({
      remaining: 1000,
    })
    expect(origin).toBe('https://tessera.test')
  })
})
