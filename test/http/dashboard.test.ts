import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { call, type Harness, harness } from '../helpers.js'
import { alertOf, DashboardClient, titleOf } from './dashboard-client.js'

const password = 'correct horse battery staple'

describe('dashboard pages, acting as the account holder through the token service', () => {
  let h: Harness
  let browser: DashboardClient

  beforeEach(async () => {
    h = await harness()
    browser = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite('alice', cliActor)
    const done = await browser.post(`/account/setup/${link}`, { password, confirm: password })
    expect(done).toMatchObject({ status: 303, location: '/account' })
    await browser.get('/account') // as a browser follows the redirect: the page has the CSRF token
  })
  afterEach(() => h.close())

  it('shows the default token first, with its pk string', async () => {
    const page = await browser.get('/account')
    expect(page.status).toBe(200)
    expect(titleOf(page.body)).toBe('Access tokens')
    expect(page.headers['cache-control']).toBe('no-store')
    const rows = page.body.split('<tr>').slice(2)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toContain('Default public token')
    expect(rows[0]).toContain(h.alice.defaultToken.token)
  })

  it('creates a pk and an sk; the sk string is shown once and never listed', async () => {
    const pk = await browser.post('/account/tokens/new', { note: 'map', scopes: 'styles:read' })
    expect(pk.status).toBe(200)
    expect(titleOf(pk.body)).toBe('Token created')
    const pkString = /id="new-token" readonly value="([^"]+)"/.exec(pk.body)?.[1] ?? ''
    expect(pkString.startsWith('pk.')).toBe(true)

    const sk = await browser.post('/account/tokens/new', {
      note: 'server',
      scopes: ['tokens:read', 'styles:read'],
      allowedUrls: ' example.com \n\n*.example.org\nexample.com',
    })
    const skString = /id="new-token" readonly value="([^"]+)"/.exec(sk.body)?.[1] ?? ''
    expect(skString.startsWith('sk.')).toBe(true)
    expect(sk.body).toContain('it will not be shown again')
    expect(sk.headers['cache-control']).toBe('no-store')

    const list = await browser.get('/account')
    expect(list.body).toContain(pkString)
    expect(list.body).not.toContain(skString)
    const api = await call(
      h.app,
      'GET',
      '/tokens/v2/alice',
      (await h.token('alice', ['tokens:read'])).token,
    )
    const server = api.body.find((t: { note: string }) => t.note === 'server')
    expect(server).toMatchObject({
      usage: 'sk',
      scopes: ['tokens:read', 'styles:read'],
      allowedUrls: ['example.com', '*.example.org'],
    })
    expect((await call(h.app, 'GET', '/tokens/v2', skString)).body.code).toBe('TokenValid')
  })

  it('refuses a broken rule with the contract message, 422, keeping what was typed', async () => {
    // What did not happen above; the sentence at the field, linked from the alert; the
    // contract's message beneath.
    const said = (body: string, field: string, sentence: string, api: string) => {
      expect(body).toContain(`<p class="field-error" id="${field}-error">${sentence}</p>`)
      expect(body).toContain(`<li><a href="#${field}">${sentence}</a></li>`)
      expect(body).toContain(`<p class="hint">The API answers this with “${api}”.</p>`)
    }
    const bad = await browser.post('/account/tokens/new', {
      note: 'keep <me>',
      scopes: 'styles:read',
      allowedUrls: 'not a url',
    })
    expect(bad.status).toBe(422)
    expect(alertOf(bad.body)).toBe('The token was not created.')
    said(
      bad.body,
      'allowed-urls',
      '“not a url” is not a URL or host name.',
      'resources are invalid',
    )
    expect(bad.body).toContain(
      'aria-describedby="allowed-urls-error urls-hint" aria-invalid="true"',
    )
    expect(bad.body).toContain('value="keep &lt;me&gt;"')
    expect(bad.body).toMatch(/value="styles:read" aria-describedby="[^"]+" checked/)
    expect(bad.body).toContain('>not a url</textarea>')

    // Too long and no scope: both said, at their fields.
    const long = await browser.post('/account/tokens/new', { note: 'x'.repeat(1025) })
    expect(long.status).toBe(422)
    expect(alertOf(long.body)).toBe('The token was not created.')
    said(long.body, 'note', 'The note may be at most 1024 characters.', 'resources are invalid')
    expect(long.body).toContain('<li><a href="#scopes">Choose at least one scope.</a></li>')

    const none = await h.token('alice', [], { note: 'nothing' })
    const scoped = await browser.post(`/account/tokens/${none.id}`, {
      note: 'n',
      scopes: 'styles:read',
    })
    expect(scoped.status).toBe(422)
    expect(alertOf(scoped.body)).toBe('Your changes were not saved.')
    said(
      scoped.body,
      'scopes',
      'This token was created without scopes, so it cannot be given any: create a new token with the scopes it needs.',
      'scopes are invalid',
    )

    const pkId = h.alice.defaultToken.id
    const secret = await browser.post(`/account/tokens/${pkId}`, {
      note: 'd',
      scopes: 'tokens:read',
    })
    expect(secret.status).toBe(422)
    expect(alertOf(secret.body)).toBe('Your changes were not saved.')
    said(
      secret.body,
      'scopes',
      'A public (pk) token may hold public scopes only, and a token never changes its kind: create a new token for secret scopes.',
      'scopes are invalid',
    )
    const api = await call(
      h.app,
      'GET',
      '/tokens/v2/alice',
      (await h.token('alice', ['tokens:read'])).token,
    )
    expect(api.body).toHaveLength(3)
    // Unchanged: the refused update wrote nothing.
    expect(api.body.find((t: { default: boolean }) => t.default)).toEqual(h.alice.defaultToken)
  })

  it('edits a token and deletes another: retrieve says TokenRevoked at once', async () => {
    const made = await h.token('alice', ['styles:read'], { note: 'old' })
    const saved = await browser.post(`/account/tokens/${made.id}`, {
      note: 'new note',
      scopes: ['styles:read', 'fonts:read'],
      allowedUrls: 'https://example.com:8080/maps',
    })
    expect(saved).toMatchObject({ status: 303, location: `/account/tokens/${made.id}?saved=1` })
    const page = await browser.get(saved.location as string)
    expect(titleOf(page.body)).toBe('new note')
    expect(page.body).toContain('<p role="status" class="notice">Changes saved</p>')

    const confirm = await browser.get(`/account/tokens/${made.id}/delete`)
    expect(titleOf(confirm.body)).toBe('Delete this token?')
    const gone = await browser.post(`/account/tokens/${made.id}/delete`, {})
    expect(gone).toMatchObject({ status: 303, location: '/account?done=deleted' })
    expect((await call(h.app, 'GET', '/tokens/v2', made.token)).body.code).toBe('TokenRevoked')
  })

  it('does not delete the default token', async () => {
    const page = await browser.get(`/account/tokens/${h.alice.defaultToken.id}`)
    expect(page.body).not.toContain('Delete token')
    const refused = await browser.post(`/account/tokens/${h.alice.defaultToken.id}/delete`, {})
    expect(refused.status).toBe(422)
    expect(alertOf(refused.body)).toBe('the default token cannot be deleted')
  })

  it.each([
    ['0', 'expires is in the past'],
    ['-3', 'expires is in the past'],
    ['61', 'expires is more than one hour in the future'],
    ['soon', 'resources are invalid'],
  ])('refuses a temporary token expiring in %s minutes: %s', async (minutes, message) => {
    const page = await browser.post('/account/temporary', { minutes, scopes: 'styles:read' })
    expect(page.status).toBe(422)
    expect(alertOf(page.body)).toBe(message)
    expect(page.body).toContain(`value="${minutes}"`)
  })

  it('makes a temporary token the API accepts', async () => {
    const page = await browser.post('/account/temporary', { minutes: '5', scopes: 'tokens:read' })
    const tk = /id="new-token" readonly value="([^"]+)"/.exec(page.body)?.[1] ?? ''
    const retrieved = await call(h.app, 'GET', '/tokens/v2', tk)
    expect(retrieved.body).toMatchObject({
      code: 'TokenValid',
      token: {
        usage: 'tk',
        user: 'alice',
        scopes: ['tokens:read'],
        expires: '2026-11-22T12:05:00.000Z',
      },
    })
  })

  it('pages the tokens 100 a page, both ways', async () => {
    for (let i = 0; i < 150; i++) {
      h.clock.now += 1
      await h.token('alice', [], { note: `t${String(i).padStart(3, '0')}` })
    }
    const first = await browser.get('/account')
    expect(first.body.split('<tr>').length - 2).toBe(100)
    expect(first.body).not.toContain('Previous page')
    const next = /href="(\/account\?start=[^"]+)">Next page/.exec(first.body)?.[1] ?? ''
    const second = await browser.get(next.replaceAll('&amp;', '&'))
    expect(second.body.split('<tr>').length - 2).toBe(51)
    expect(second.body).toContain('>t099<')
    expect(second.body).not.toContain('Next page')
    const previous = /href="(\/account\?before=[^"]+)">Previous page/.exec(second.body)?.[1] ?? ''
    const back = await browser.get(previous)
    expect(back.body.split('<tr>').length - 2).toBe(100)
    expect(back.body.indexOf('Default public token')).toBeLessThan(back.body.indexOf('>t000<'))
    expect(back.body).not.toContain('Previous page')
    expect((await browser.get('/account?start=nonsense')).status).toBe(422)
  })

  it('shows the scopes and the settings of the account', async () => {
    const scopes = await browser.get('/account/scopes')
    expect(titleOf(scopes.body)).toBe('Scopes')
    const available = h.ctx.catalog.availableTo('standard', [])
    expect(scopes.body.split('<tr>').length - 2).toBe(available.length)
    expect(scopes.body).toContain(
      '<code>tokens:write</code></th><td>Create, update and delete access tokens</td>',
    )
    const settings = await browser.get('/account/settings')
    expect(titleOf(settings.body)).toBe('Settings')
    expect(settings.body).toContain('<dt>Plan</dt><dd>standard</dd>')
  })

  it('renders what was typed as text', async () => {
    await browser.post('/account/tokens/new', {
      note: '<script>alert(1)</script>',
      scopes: 'styles:read',
    })
    const page = await browser.get('/account')
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(page.body).not.toContain('<script>alert(1)')
  })

  it('does not count against the API rate limit, and its cookie opens no API route', async () => {
    const limited = await harness({ RATE_LIMIT_PER_MINUTE: '2' })
    try {
      const b = new DashboardClient(limited.app)
      const link = await limited.ctx.holders.invite('alice', cliActor)
      await b.post(`/account/setup/${link}`, { password, confirm: password })
      for (let i = 0; i < 5; i++) expect((await b.get('/account')).status).toBe(200)
      const api = await limited.app.inject({
        method: 'GET',
        url: '/tokens/v2/alice',
        headers: { cookie: b.cookie ?? '' },
      })
      expect(api.statusCode).toBe(401)
      expect(api.json()).toEqual({
        message: 'Unauthorized',
        details:
          'no token: give it as the access_token query parameter or an Authorization: Bearer header',
      })
      expect(api.headers['x-rate-limit-limit']).toBe('2')
    } finally {
      await limited.close()
    }
  })
})
