import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { redactUrl } from '../../src/http/redact.js'
import { call, type Harness, harness } from '../helpers.js'
import { alertOf, DashboardClient, titleOf } from './dashboard-client.js'

const password = 'correct horse battery staple'
const hour = 3_600_000

describe('dashboard security (DASHBOARD.md section 5)', () => {
  let h: Harness
  let link: string

  beforeEach(async () => {
    h = await harness()
    link = await h.ctx.holders.invite('alice', cliActor)
    const first = new DashboardClient(h.app)
    expect(
      (await first.post(`/account/setup/${link}`, { password, confirm: password })).status,
    ).toBe(303)
  })
  afterEach(() => h.close())

  const signedIn = async (ip?: string) => {
    const b = new DashboardClient(h.app, ip)
    expect((await b.signIn('alice', password)).location).toBe('/account')
    await b.get('/account')
    return b
  }
  const tokenCount = async () =>
    (await call(h.app, 'GET', '/tokens/v2/alice', (await h.token('alice', ['tokens:read'])).token))
      .body.length

  it('sets the session cookie with the contract flags, a new id at every sign-in', async () => {
    const b = new DashboardClient(h.app)
    const res = await b.signIn('alice', password)
    const cookie = String(res.headers['set-cookie'])
    expect(cookie).toMatch(
      /^__Host-tessera_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=604800; Secure; HttpOnly; SameSite=Lax$/,
    )
    const first = b.cookie
    await b.signIn('alice', password)
    expect(b.cookie).not.toBe(first)
    const stale = new DashboardClient(h.app)
    stale.cookie = first
    expect((await stale.get('/account')).location).toBe('/account/sign-in')
  })

  it('answers a wrong password and an unknown user with the same page', async () => {
    const wrong = await new DashboardClient(h.app).signIn('alice', 'not the password at all')
    const unknown = await new DashboardClient(h.app).signIn('nobody', 'not the password at all')
    expect(wrong.status).toBe(401)
    expect(unknown.status).toBe(401)
    expect(alertOf(wrong.body)).toBe('Wrong username or password')
    expect(unknown.body.replace('value="nobody"', 'value="alice"')).toBe(wrong.body)
  })

  it('redirects a signed-out visit to sign-in and back, never to another site', async () => {
    const b = new DashboardClient(h.app)
    const away = await b.get('/account/tokens/new?x=1')
    expect(away).toMatchObject({
      status: 303,
      location: '/account/sign-in?next=%2Faccount%2Ftokens%2Fnew%3Fx%3D1',
    })
    const back = await b.post('/account/sign-in', {
      username: 'alice',
      password,
      next: '/account/tokens/new?x=1',
    })
    expect(back.location).toBe('/account/tokens/new?x=1')
    for (const next of [
      'https://evil.example/',
      '//evil.example',
      '/\\evil.example',
      '/account//evil.example',
      'javascript:alert(1)',
      '/tokens/v2/alice',
      '/accountant',
    ]) {
      const res = await new DashboardClient(h.app).post('/account/sign-in', {
        username: 'alice',
        password,
        next,
      })
      expect(res.location, next).toBe('/account')
    }
    const page = await new DashboardClient(h.app).get('/account/sign-in?next=https://evil.example/')
    expect(page.body).toContain('name="next" value="/account"')
  })

  it('refuses a form without the session CSRF token, or with another one: 403, nothing changed', async () => {
    const b = await signedIn()
    const before = await tokenCount()
    for (const csrf of ['', 'x'.repeat(43), (await signedIn()).csrf]) {
      const res = await b.post('/account/tokens/new', {
        _csrf: csrf,
        note: 'csrf',
        scopes: 'tokens:read',
      })
      expect(res.status).toBe(403)
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(titleOf(res.body)).toBe('Request refused')
    }
    const del = await b.post(`/account/tokens/${h.alice.defaultToken.id}/delete`, { _csrf: 'nope' })
    expect(del.status).toBe(403)
    expect(await tokenCount()).toBe(before + 1) // the token counting them
  })

  it('refuses a POST from another origin, or from nowhere, even with the CSRF token', async () => {
    const b = await signedIn()
    const before = await tokenCount()
    for (const headers of [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'http://tessera.test' },
      { origin: undefined, referer: 'https://evil.example/page' },
      { origin: undefined },
    ]) {
      const res = await b.post('/account/tokens/new', { note: 'x' }, headers)
      expect(res.status, JSON.stringify(headers)).toBe(403)
    }
    const viaReferer = await b.post(
      '/account/tokens/new',
      { note: 'ok', scopes: 'styles:read' },
      { origin: undefined, referer: 'https://tessera.test/account/tokens/new' },
    )
    expect(viaReferer.status).toBe(200)
    expect(await tokenCount()).toBe(before + 2)
    const signIn = await new DashboardClient(h.app).post(
      '/account/sign-in',
      { username: 'alice', password },
      { origin: 'https://evil.example' },
    )
    expect(signIn.status).toBe(403)
    expect(signIn.headers['set-cookie']).toBeUndefined()
  })

  it('throttles sign-in after 5 failures for a username, without checking the password', async () => {
    const b = new DashboardClient(h.app, '10.0.0.1')
    for (let i = 0; i < 5; i++)
      expect((await b.signIn('alice', 'wrong password!')).status).toBe(401)
    const refused = await b.signIn('alice', password)
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBe('900')
    expect(refused.body).toContain('Try again in 15 minutes.')
    expect(refused.headers['set-cookie']).toBeUndefined()
    h.clock.now += 14 * 60_000
    expect((await b.signIn('alice', password)).headers['retry-after']).toBe('60')
    h.clock.now += 60_000
    expect((await b.signIn('alice', password)).status).toBe(303)
  })

  it('throttles sign-in after 20 failures from one address, across usernames', async () => {
    const b = new DashboardClient(h.app, '10.0.0.2')
    for (let i = 0; i < 20; i++)
      expect((await b.signIn(`user${i % 5}`, 'wrong password!')).status).toBe(401)
    expect((await b.signIn('alice', password)).status).toBe(429)
    expect((await new DashboardClient(h.app, '10.0.0.3').signIn('alice', password)).status).toBe(
      303,
    )
  })

  it('ends this session on Sign out, every session on Sign out everywhere', async () => {
    const a = await signedIn()
    const b = await signedIn()
    expect((await a.post('/account/sign-out', {})).location).toBe('/account/sign-in')
    expect((await a.get('/account')).status).toBe(303)
    expect((await b.get('/account')).status).toBe(200)
    const c = await signedIn()
    expect((await c.post('/account/sign-out-everywhere', {})).location).toBe('/account/sign-in')
    expect((await b.get('/account')).location).toBe('/account/sign-in')
    expect((await c.get('/account')).location).toBe('/account/sign-in')
  })

  it('ends the other sessions on a password change, keeping this one', async () => {
    const a = await signedIn()
    const b = await signedIn()
    const wrong = await a.post('/account/settings/password', {
      current: 'not it at all!',
      password: 'a new password here',
    })
    expect(wrong.status).toBe(422)
    expect(alertOf(wrong.body)).toBe('Current password is wrong')
    const short = await a.post('/account/settings/password', {
      current: password,
      password: 'short',
    })
    expect(alertOf(short.body)).toBe('Passwords must be 12 to 256 characters long')
    expect((await b.get('/account')).status).toBe(200)
    const done = await a.post('/account/settings/password', {
      current: password,
      password: 'a new password here',
    })
    expect(done.location).toBe('/account/settings?done=password')
    expect((await a.get('/account')).status).toBe(200)
    expect((await b.get('/account')).location).toBe('/account/sign-in')
    expect((await new DashboardClient(h.app).signIn('alice', password)).status).toBe(401)
    expect((await new DashboardClient(h.app).signIn('alice', 'a new password here')).status).toBe(
      303,
    )
  })

  it('ends a session idle for 12 hours, and any session after 7 days', async () => {
    const idle = await signedIn()
    h.clock.now += 12 * hour - 1000
    expect((await idle.get('/account')).status).toBe(200)
    h.clock.now += 12 * hour - 1000
    expect((await idle.get('/account')).status).toBe(200)
    h.clock.now += 12 * hour
    expect((await idle.get('/account')).location).toBe('/account/sign-in')

    const busy = await signedIn()
    for (let i = 0; i < 7 * 2 - 1; i++) {
      h.clock.now += 12 * hour - 1000
      expect((await busy.get('/account')).status).toBe(200)
    }
    h.clock.now += 12 * hour
    expect((await busy.get('/account')).location).toBe('/account/sign-in')
  })

  it('uses a setup link once; a newer link voids it; it expires after 24 hours', async () => {
    const b = new DashboardClient(h.app)
    const reused = await b.get(`/account/setup/${link}`)
    expect(reused.status).toBe(410)
    expect((await b.post(`/account/setup/${link}`, { password, confirm: password })).status).toBe(
      410,
    )
    expect((await b.get('/account/setup/never-issued')).status).toBe(404)

    const older = await h.ctx.holders.invite('alice', cliActor)
    const newer = await h.ctx.holders.invite('alice', cliActor)
    expect((await b.get(`/account/setup/${older}`)).status).toBe(410)
    expect(titleOf((await b.get(`/account/setup/${newer}`)).body)).toBe('Set your password')
    const short = await b.post(`/account/setup/${newer}`, { password: 'short', confirm: 'short' })
    expect(short.status).toBe(422)
    const mismatch = await b.post(`/account/setup/${newer}`, { password, confirm: `${password}!` })
    expect(mismatch.status).toBe(422)
    expect(alertOf(mismatch.body)).toBe('The two passwords are not the same')
    h.clock.now += 24 * hour
    expect((await b.get(`/account/setup/${newer}`)).status).toBe(410)
  })

  it('puts the security headers on every page, error pages included', async () => {
    const b = await signedIn()
    const pages = [
      await b.get('/account'),
      await b.get('/account/nowhere'),
      await new DashboardClient(h.app).get('/account/sign-in'),
      await new DashboardClient(h.app).get(`/account/setup/${link}`),
      await b.post('/account/tokens/new', { _csrf: 'bad' }),
    ]
    expect(pages.map((p) => p.status)).toEqual([200, 404, 200, 410, 403])
    for (const page of pages) {
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(page.headers['content-security-policy']).toBe(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
      )
      expect(page.headers['x-content-type-options']).toBe('nosniff')
      expect(page.headers['referrer-policy']).toBe('same-origin')
      expect(page.headers['access-control-allow-origin']).toBeUndefined()
    }
    const root = await h.app.inject({ method: 'GET', url: '/' })
    expect(root.statusCode).toBe(302)
    expect(root.headers.location).toBe('/account')
    const api = await h.app.inject({ method: 'GET', url: '/nowhere' })
    expect(api.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(api.json()).toEqual({ message: 'Not found' })
  })

  it('keeps setup link secrets out of logged URLs', () => {
    expect(redactUrl(`/account/setup/${link}`)).toBe('/account/setup/[redacted]')
    expect(redactUrl(`/account//setup/${link}?x=1`)).toBe('/account//setup/[redacted]?x=1')
  })
})

describe('dashboard sign-up', () => {
  it('is 404 unless DASHBOARD_SIGNUP=open', async () => {
    const h = await harness()
    try {
      expect((await new DashboardClient(h.app).get('/account/sign-up')).status).toBe(404)
      expect(
        (await new DashboardClient(h.app).post('/account/sign-up', { username: 'carol', password }))
          .status,
      ).toBe(404)
      expect(await h.ctx.accounts.find('carol')).toBeUndefined()
    } finally {
      await h.close()
    }
  })

  it('creates an account with its default token and signs the holder in when open', async () => {
    const h = await harness({ DASHBOARD_SIGNUP: 'open' })
    try {
      const b = new DashboardClient(h.app)
      expect(titleOf((await b.get('/account/sign-up')).body)).toBe('Create an account')
      const taken = await b.post('/account/sign-up', { username: 'alice', password })
      expect(taken.status).toBe(422)
      expect(alertOf(taken.body)).toBe('This username is taken.')
      const bad = await b.post('/account/sign-up', { username: 'Bad Name', password })
      expect(bad.status).toBe(422)
      const short = await b.post('/account/sign-up', { username: 'carol', password: 'short' })
      expect(short.status).toBe(422)
      expect(await h.ctx.accounts.find('carol')).toBeUndefined()
      const made = await b.post('/account/sign-up', { username: 'carol', password })
      expect(made.location).toBe('/account')
      const page = await b.get('/account')
      expect(page.body).toContain('Default public token')
      expect(await h.ctx.accounts.find('carol')).toMatchObject({
        username: 'carol',
        plan: 'standard',
      })
    } finally {
      await h.close()
    }
  })
})

describe('dashboard behind a TLS-terminating proxy', () => {
  it('refuses a request that did not come over HTTPS with an HTML page', async () => {
    const h = await harness({ TRUST_PROXY: '1' })
    try {
      const plain = await h.app.inject({ method: 'GET', url: '/account/sign-in' })
      expect(plain.statusCode).toBe(403)
      expect(plain.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(plain.body).toContain('HTTPS is required')
      const secure = await h.app.inject({
        method: 'GET',
        url: '/account/sign-in',
        headers: { 'x-forwarded-proto': 'https' },
      })
      expect(secure.statusCode).toBe(200)
    } finally {
      await h.close()
    }
  })
})
