import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type Actor, cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { DashboardClient, titleOf } from './dashboard-client.js'

/**
 * The Activity page (the account's audit events in plain words) and the use of each token:
 * `Last used` on the tokens page, validations per hour charted on the token's page.
 */

const password = 'correct horse battery staple'
const operator: Actor = { type: 'admin', id: 'ops1', address: '10.0.0.9', requestId: 'r-1' }
const minute = 60_000
const hour = 60 * minute
const day = 24 * hour

let h: Harness
let browser: DashboardClient

/** A browser that has set alice's password with a setup link and holds the tokens page. */
async function holderOf(username: string, ip = '127.0.0.1') {
  const b = new DashboardClient(h.app, ip)
  const link = await h.ctx.holders.invite(username, cliActor)
  const done = await b.post(`/account/setup/${link}`, { password, confirm: password })
  expect(done).toMatchObject({ status: 303, location: '/account' })
  await b.get('/account')
  return b
}

/** alice signed in afresh: moving the clock by days ends sessions (idle for 12 hours). */
async function signedInAgain() {
  const b = new DashboardClient(h.app)
  expect((await b.signIn('alice', password)).status).toBe(303)
  return b
}

beforeEach(async () => {
  h = await harness()
  browser = await holderOf('alice')
})
afterEach(() => h.close())

const entities: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
}
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(amp|lt|gt|quot|#39);/g, (e) => entities[e] ?? e)
    .replace(/\s+/g, ' ')
    .trim()

/** The cells of each body row of the table of class `kind`, as text, or as HTML. */
function rowsOf(body: string, kind: string, as: 'text' | 'html' = 'text'): string[][] {
  const table = new RegExp(`<table class="${kind}[^"]*">[\\s\\S]*?<tbody>([\\s\\S]*?)</tbody>`)
  const tbody = table.exec(body)?.[1] ?? ''
  return [...tbody.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...(row[1] ?? '').matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((cell) =>
      as === 'text' ? text(cell[1] ?? '') : (cell[1] ?? ''),
    ),
  )
}
const short = (id: string) => `${id.slice(0, 8)}…`
const at = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`

describe('the Activity page', () => {
  it('lists the events of the API, the dashboard, the command line and an operator, newest first', async () => {
    h.clock.now = T0 + 1000
    const sk = await h.token('alice', [...all, 'styles:read', 'fonts:read'], { note: 'automation' })
    h.clock.now = T0 + 2000
    const made = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, {
      note: 'website',
      scopes: ['styles:read'],
    })
    expect(made.status, JSON.stringify(made.body)).toBe(200)
    const website = made.body as { id: string; token: string }
    h.clock.now = T0 + 3000
    const patched = await call(h.app, 'PATCH', `/tokens/v2/alice/${website.id}`, sk.token, {
      scopes: ['styles:read', 'fonts:read'],
    })
    expect(patched.status).toBe(200)
    h.clock.now = T0 + 4000
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, {
      expires: new Date(T0 + 10 * minute).toISOString(),
      scopes: ['styles:read'],
    })
    expect(tk.status).toBe(200)
    h.clock.now = T0 + 5000
    const scratch = await browser.post('/account/tokens/new', {
      note: 'scratch',
      scopes: 'styles:read',
    })
    const scratchId = /href="\/account\/tokens\/(c[a-z0-9]{24})">Token settings/.exec(
      scratch.body,
    )?.[1] as string
    h.clock.now = T0 + 6000
    await browser.post(`/account/tokens/${scratchId}/delete`, {})
    h.clock.now = T0 + 7000
    await h.ctx.accounts.change('alice', { plan: 'pro' }, operator)
    h.clock.now = T0 + 8000
    const stranger = new DashboardClient(h.app, '203.0.113.7')
    expect((await stranger.signIn('alice', 'not the password!')).status).toBe(401)
    h.clock.now = T0 + 9000
    await browser.get('/account/settings')
    const changed = await browser.post('/account/settings/password', {
      current: password,
      password: `${password} 2`,
    })
    expect(changed.status).toBe(303)

    const page = await browser.get('/account/activity')
    expect(page.status).toBe(200)
    expect(titleOf(page.body)).toBe('Activity')
    expect(page.body).toContain('<a href="/account/activity" aria-current="page">Activity</a>')
    expect(page.body).toContain(
      '<caption class="visually-hidden">Events of your account, newest first</caption>',
    )
    const rows = rowsOf(page.body, 'activity')
    const plan = h.alice.plan
    expect(rows.map((cells) => cells.slice(0, 5))).toEqual([
      [at(T0 + 9000), 'Password changed', 'alice (password)', 'Your account', '127.0.0.1'],
      [at(T0 + 8000), 'Sign-in failed', 'Sign-in page', 'Your account', '203.0.113.7'],
      [
        at(T0 + 7000),
        'Plan or features changed Plan pro',
        'Operator (admin key ops1)',
        'Your account',
        '10.0.0.9',
      ],
      [
        at(T0 + 6000),
        'Token deleted',
        'alice (password)',
        `Token ${short(scratchId)} (deleted)`,
        '127.0.0.1',
      ],
      [
        at(T0 + 5000),
        'Token created pk · styles:read',
        'alice (password)',
        `Token ${short(scratchId)} (deleted)`,
        '127.0.0.1',
      ],
      [
        at(T0 + 4000),
        'Temporary token issued styles:read · until 2026-11-22 12:10 UTC',
        `API token ${short(sk.id)} (sk)`,
        'A temporary token',
        '127.0.0.1',
      ],
      [
        at(T0 + 3000),
        'Token updated Changed: scopes',
        `API token ${short(sk.id)} (sk)`,
        `website ${short(website.id)}`,
        '127.0.0.1',
      ],
      [
        at(T0 + 2000),
        'Token created pk · styles:read',
        `API token ${short(sk.id)} (sk)`,
        `website ${short(website.id)}`,
        '127.0.0.1',
      ],
      [
        at(T0 + 1000),
        'Token created sk · tokens:read, tokens:write, scopes:list, styles:read, fonts:read',
        'Command line',
        `automation ${short(sk.id)}`,
        'none',
      ],
      [at(T0), 'Password set', 'alice (setup link)', 'Your account', '127.0.0.1'],
      [at(T0), 'Setup link issued', 'Command line', 'Your account', 'none'],
      [at(T0), 'Account created Plan standard', 'Command line', 'Your account', 'none'],
    ])
    expect(plan).toBe('standard')
    // The request id of every event made over HTTP, as the request log line has it.
    const events = await h.ctx.audit.list({ username: 'alice', limit: 100 })
    expect(rows.map((cells) => cells[5])).toEqual(events.map((e) => e.requestId ?? 'none'))
    expect(rows[2]?.[5]).toBe('r-1')
    expect(rows[0]?.[5]).toMatch(/^[a-z0-9]{8}-[0-9a-z]+$/)
    // A token still there links to its page; a deleted one does not.
    const html = rowsOf(page.body, 'activity', 'html')
    expect(html[6]?.[3]).toContain(`<a href="/account/tokens/${website.id}">website</a>`)
    expect(html[3]?.[3]).not.toContain('<a ')
    // Events hold no token string and no password; neither does the page.
    for (const secret of [sk.token, website.token, tk.body.token, password]) {
      expect(page.body).not.toContain(secret)
    }
    expect(page.body).not.toContain('Next page')
  })

  it('says sign-outs in words, and is on every signed-in page', async () => {
    for (const path of ['/account', '/account/scopes', '/account/settings', '/account/temporary']) {
      const page = await browser.get(path)
      expect(page.body, path).toContain('<a href="/account/activity">Activity</a>')
      expect(page.body, path).toContain('<a href="/account/scopes"')
    }
    const other = new DashboardClient(h.app, '198.51.100.4')
    expect((await other.signIn('alice', password)).status).toBe(303)
    await other.get('/account')
    await other.post('/account/sign-out', {})
    await browser.post('/account/sign-out-everywhere', {})
    const again = new DashboardClient(h.app)
    expect((await again.signIn('alice', password)).status).toBe(303)
    const rows = rowsOf((await again.get('/account/activity')).body, 'activity')
    expect(rows.slice(0, 4).map((cells) => cells.slice(1, 5))).toEqual([
      ['Signed in', 'alice (password)', 'Your account', '127.0.0.1'],
      ['Signed out everywhere', 'alice (password)', 'Every session', '127.0.0.1'],
      ['Signed out', 'alice (password)', 'A dashboard session', '198.51.100.4'],
      ['Signed in', 'alice (password)', 'Your account', '198.51.100.4'],
    ])
  })

  it('pages 50 events a page, newest first, and refuses a cursor that is no event id', async () => {
    for (let i = 0; i < 60; i++) {
      h.clock.now = T0 + (i + 1) * 1000
      await h.ctx.holders.invite('alice', cliActor)
    }
    const events = await h.ctx.audit.list({ username: 'alice', limit: 100 })
    expect(events).toHaveLength(63)
    const first = await browser.get('/account/activity')
    expect(rowsOf(first.body, 'activity')).toHaveLength(50)
    expect(rowsOf(first.body, 'activity')[0]?.[0]).toBe(at(T0 + 60_000))
    const next = /<a href="(\/account\/activity\?before=([0-9a-z]+))">Next page<\/a>/.exec(
      first.body,
    )
    expect(next?.[2]).toBe(events[49]?.id)
    expect(first.body).not.toContain('Newest events')

    const second = await browser.get(next?.[1] as string)
    expect(second.status).toBe(200)
    const rows = rowsOf(second.body, 'activity')
    expect(rows).toHaveLength(13)
    expect(rows[0]?.[0]).toBe(at(T0 + 10_000))
    expect(rows.at(-1)?.[1]).toBe('Account created Plan standard')
    expect(second.body).not.toContain('Next page')
    expect(second.body).toContain('<a href="/account/activity">Newest events</a>')

    const oldest = await browser.get(`/account/activity?before=${events.at(-1)?.id}`)
    expect(oldest.status).toBe(200)
    expect(oldest.body).toContain('No older events.')

    for (const bad of ['ABC', `${'a'.repeat(33)}`, '', 'a%27%3Cb', '0000%2F..', 'a%00', 'zz%20']) {
      const refused = await browser.get(`/account/activity?before=${bad}`)
      expect(refused.status, bad).toBe(422)
      expect(titleOf(refused.body)).toBe('Request refused')
      expect(refused.body).toContain('This is not the address of a page of your activity.')
    }
  })

  it("never shows another account's events, nor those of an earlier account of the same name", async () => {
    const bobSk = await h.token('bob', all)
    const bobs = await call(h.app, 'POST', '/tokens/v2/bob', bobSk.token, { note: 'bob thing' })
    expect(bobs.status).toBe(200)
    await new DashboardClient(h.app, '192.0.2.1').signIn('bob', 'not the password!')
    const page = (await browser.get('/account/activity')).body
    expect(rowsOf(page, 'activity').map((cells) => cells[1])).toEqual([
      'Password set',
      'Setup link issued',
      'Account created Plan standard',
    ])
    for (const secret of [short(bobSk.id), short(bobs.body.id), '192.0.2.1', 'bob']) {
      expect(page).not.toContain(secret)
    }
    for (const e of await h.ctx.audit.list({ username: 'bob', limit: 100 })) {
      if (e.requestId) expect(page).not.toContain(e.requestId)
    }

    // carol is created, tried, deleted; a new carol gets the name and none of that history.
    await h.ctx.accounts.create('carol', undefined, [], operator)
    await new DashboardClient(h.app, '192.0.2.2').signIn('carol', 'not the password!')
    await h.ctx.accounts.remove('carol', operator)
    h.clock.now = T0 + 2 * hour // a deleted account's name is free again after an hour
    await h.ctx.accounts.create('carol', undefined, [], cliActor)
    const carol = await holderOf('carol')
    const rows = rowsOf((await carol.get('/account/activity')).body, 'activity')
    expect(rows.map((cells) => [cells[0], cells[1], cells[2]])).toEqual([
      [at(T0 + 2 * hour), 'Password set', 'carol (setup link)'],
      [at(T0 + 2 * hour), 'Setup link issued', 'Command line'],
      [at(T0 + 2 * hour), 'Account created Plan standard', 'Command line'],
    ])
  })

  it('asks to sign in first, and comes back to the page', async () => {
    const anonymous = new DashboardClient(h.app)
    const page = await anonymous.get('/account/activity?before=0')
    expect(page.status).toBe(303)
    expect(page.location).toBe(
      `/account/sign-in?next=${encodeURIComponent('/account/activity?before=0')}`,
    )
  })
})

describe('the use of each token', () => {
  const retrieve = (token: string) => call(h.app, 'GET', `/tokens/v2?access_token=${token}`)
  /** The `Last used` cell of each row of the tokens page, by the row's first cell. */
  const lastUsedCells = async () => {
    const page = await (await signedInAgain()).get('/account')
    expect(page.body).toContain('<th scope="col">Last used</th>')
    return Object.fromEntries(
      rowsOf(page.body, 'tokens', 'html').map((cells) => [
        text(cells[0] ?? '').split(' ')[0],
        cells[6],
      ]),
    )
  }
  const never = '<span class="none">never used</span>'
  const stale = ' <span class="mark stale">unused for 90 days</span>'

  it('shows never used, then the minute of the last validation, then unused for 90 days', async () => {
    const pk = await h.token('alice', ['styles:read'], { note: 'website' })
    expect(await lastUsedCells()).toEqual({ Default: never, website: never })

    h.clock.now = T0 + 5 * minute + 17_000 // 12:05:17
    for (let i = 0; i < 3; i++) expect((await retrieve(pk.token)).body.code).toBe('TokenValid')
    // Counted in memory: shown once written.
    expect(await lastUsedCells()).toEqual({ Default: never, website: never })
    await h.ctx.usage.flush()
    const used =
      '<time datetime="2026-11-22T12:05:00.000Z">2026-11-22 <span class="clock">12:05 UTC</span></time>'
    expect(await lastUsedCells()).toEqual({ Default: never, website: used })

    // 90 days after the default token's creation (and less since the last use): no mark yet.
    h.clock.now = T0 + 90 * day
    expect(await lastUsedCells()).toEqual({ Default: never, website: used })
    h.clock.now = T0 + 91 * day
    const fresh = await h.token('alice', [], { note: 'newer' })
    expect(await lastUsedCells()).toEqual({
      Default: never + stale,
      website: used + stale,
      newer: never,
    })
    const b = await signedInAgain()
    const page = await b.get(`/account/tokens/${pk.id}`)
    expect(page.body).toContain(`<dt>Last used</dt><dd>${used}${stale}</dd>`)
    expect((await b.get(`/account/tokens/${fresh.id}`)).body).toContain(
      `<dt>Last used</dt><dd>${never}</dd>`,
    )
  })

  it('asks the usage store once per tokens page, for the tokens of that page', async () => {
    for (let i = 0; i < 120; i++) {
      h.clock.now += 1
      await h.token('alice', [], { note: `t${i}` })
    }
    const lastUsed = vi.spyOn(h.ctx.usage, 'lastUsed')
    const page = await browser.get('/account')
    expect(lastUsed).toHaveBeenCalledTimes(1)
    const ids = [...page.body.matchAll(/<th scope="row">\s*<a href="\/account\/tokens\/(c\w+)">/g)]
    expect(lastUsed.mock.calls[0]?.[0]).toEqual(ids.map((m) => m[1]))
    expect(ids).toHaveLength(100)
  })

  it("charts a token's verifications through the API, hour by hour, on its page", async () => {
    const pk = await h.token('alice', ['styles:read'], { note: 'website' })
    h.clock.now = T0 + 10 * minute // 12:10
    for (let i = 0; i < 3; i++) expect((await retrieve(pk.token)).body.code).toBe('TokenValid')
    await h.ctx.usage.flush()
    h.clock.now = T0 + hour + 20 * minute // 13:20
    expect((await retrieve(pk.token)).body.code).toBe('TokenValid')
    await h.ctx.usage.flush()
    const page = await (await signedInAgain()).get(`/account/tokens/${pk.id}`)
    expect(page.body).toContain(
      '<strong>4</strong> verifications in the last 24 hours, all valid.</p>',
    )
    const svg = /<svg [^>]*>[\s\S]*?<\/svg>/.exec(page.body)?.[0] ?? ''
    expect(svg).toContain(
      'role="img" aria-label="Verifications by hour and outcome, last 24 hours" aria-describedby="usage-summary"',
    )
    expect(svg).not.toMatch(/\sstyle=/)
    const pieces = [
      ...svg.matchAll(
        /<rect class="bar outcome-(\w+)" x="(\d+)" y="([\d.]+)" width="8" height="([\d.]+)" data-count="(\d+)"/g,
      ),
    ]
    // 12:00 is the 23rd of the 24 hours that end with this one (13:00); the peak fills the chart.
    expect(pieces.map((m) => m.slice(1))).toEqual([
      ['valid', '221', '0', '100', '3'],
      ['valid', '231', '66.67', '33.33', '1'],
    ])
    expect(page.body).toContain('<p class="chart-scale">Peak 3 an hour · times in UTC</p>')
  })

  it('says never used on the page of a token never validated', async () => {
    const page = await browser.get(`/account/tokens/${h.alice.defaultToken.id}`)
    expect(page.status).toBe(200)
    expect(page.body).toContain('<strong>0</strong> verifications in the last 24 hours.</p>')
    expect(page.body).toContain('<dt>Last used</dt><dd><span class="none">never used</span></dd>')
    expect(page.body).not.toContain('<svg')
  })
})
