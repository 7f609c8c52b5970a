import { generateSync } from 'otplib'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { call, type Harness, harness } from '../helpers.js'
import { alertOf, DashboardClient, signedInHolder, titleOf } from './dashboard-client.js'
import { sharedThrottle, tally } from './throttle-helpers.js'

const password = 'correct horse battery staple'
const minute = 60_000
const invitationPath = (body: string) =>
  /\/account\/invitations\/[A-Za-z0-9_-]{43}/.exec(body)?.[0] as string
const confirmAt = (next: string) => `/account/settings/confirm?next=${encodeURIComponent(next)}`
/** The href of the page's "Confirm it's you" link, as a browser would follow it. */
const confirmLinkOf = (body: string) =>
  /<a href="(\/account\/settings\/confirm\?next=[^"]+)">Confirm it&#39;s you<\/a>/
    .exec(body)?.[1]
    ?.replace(/&amp;/g, '&')

/**
 * A stolen session cookie, 11 minutes after its sign-in: everything that changes who may act
 * on the account asks for a recent proof first, as adding or removing a sign-in method does.
 */
describe('a session past its proof window cannot keep the account', () => {
  let h: Harness
  let alice: DashboardClient

  /** Pete joins alice as a developer by her invitation, while her sign-in is fresh. */
  const petesJoin = async () => {
    const made = await alice.post('/account/members/invite', {
      email: 'pete@acme.example',
      role: 'developer',
    })
    expect(made.status).toBe(200)
    const pete = new DashboardClient(h.app)
    const path = invitationPath(made.body)
    expect((await pete.post(path, { login: 'pete', password, confirm: password })).status).toBe(303)
  }
  const members = async () =>
    (await h.ctx.members.list('alice')).map((m) => [m.login, m.role] as const)

  beforeEach(async () => {
    h = await harness()
    alice = await signedInHolder(h.app, h.ctx, 'alice', password)
  })
  afterEach(() => h.close())

  it('a session 11 minutes old gets no owner invitation: it is sent to confirm, and comes back to Members', async () => {
    h.clock.now += 11 * minute
    const tried = await alice.post('/account/members/invite', {
      email: 'mallory@evil.example',
      role: 'owner',
    })
    expect([tried.status, tried.location]).toEqual([303, confirmAt('/account/members')])
    expect(invitationPath(tried.body)).toBeUndefined()
    expect(await h.ctx.members.invitations('alice')).toEqual([])

    // The holder confirms and lands back on Members, where the invitation now goes through.
    const page = await alice.get(confirmAt('/account/members'))
    expect(titleOf(page.body)).toBe('Confirm it&#39;s you')
    const confirmed = await alice.post('/account/settings/confirm', {
      next: '/account/members',
      password,
    })
    expect([confirmed.status, confirmed.location]).toEqual([303, '/account/members'])
    const made = await alice.post('/account/members/invite', {
      email: 'olga@acme.example',
      role: 'owner',
    })
    expect(made.status).toBe(200)
    expect(invitationPath(made.body)).toBeDefined()
  })

  it('a session 11 minutes old changes no role, removes nobody, revokes no invitation, keeps the two-step policy', async () => {
    await petesJoin()
    const secret = (
      /<code class="secret">([^<]+)<\/code>/.exec(
        (await alice.get('/account/settings/totp')).body,
      )?.[1] ?? ''
    ).replace(/ /g, '')
    const code = generateSync({ secret, epoch: Math.floor(h.clock.now / 1000) })
    expect((await alice.post('/account/settings/totp', { code })).status).toBe(200)
    expect((await alice.post('/account/members/policy', { require2fa: 'on' })).status).toBe(303)
    const open = await alice.post('/account/members/invite', {
      email: 'dana@acme.example',
      role: 'viewer',
    })
    expect(open.status).toBe(200)
    const [invitation] = await h.ctx.members.invitations('alice')

    h.clock.now += 11 * minute
    for (const [path, fields] of [
      ['/account/members/pete/role', { role: 'owner' }],
      ['/account/members/pete/remove', {}],
      [`/account/members/invitations/${invitation?.id}/revoke`, {}],
      ['/account/members/policy', {}],
    ] as const) {
      const res = await alice.post(path, fields)
      expect([res.status, res.location], path).toEqual([303, confirmAt('/account/members')])
    }
    expect(await members()).toEqual([
      ['alice', 'owner'],
      ['pete', 'developer'],
    ])
    expect((await h.ctx.members.invitations('alice')).map((i) => i.email)).toEqual([
      'dana@acme.example',
    ])
    expect(await h.ctx.factors.accountRequires('alice')).toBe(true)
  })

  it('a session 11 minutes old makes a token with tokens:write only after confirming, other tokens at once', async () => {
    h.clock.now += 11 * minute
    const tried = await alice.post('/account/tokens/new', {
      note: 'backdoor',
      scopes: ['tokens:read', 'tokens:write'],
    })
    expect(tried.status).toBe(403)
    expect(alertOf(tried.body)).toBe(
      'Confirm it&#39;s you first: a token with tokens:write can make other tokens.',
    )
    expect(tried.body).not.toMatch(/id="new-token"/)
    // What was typed is kept on the form.
    expect(tried.body).toContain('value="backdoor"')
    expect(tried.body).toMatch(/value="tokens:write"[^>]*checked/)
    // A temporary token with tokens:write makes permanent ones: the same.
    const temporary = await alice.post('/account/temporary', {
      scopes: 'tokens:write',
      minutes: '60',
    })
    expect(temporary.status).toBe(403)
    expect(alertOf(temporary.body)).toBe(
      'Confirm it&#39;s you first: a token with tokens:write can make other tokens.',
    )

    // Giving tokens:write to a token whose string the session kept, or rolling one that has it.
    const reader = await alice.post('/account/tokens/new', {
      note: 'reader',
      scopes: 'tokens:read',
    })
    expect(reader.status).toBe(200)
    const readerString = /id="new-token"[^>]*value="([^"]+)"/.exec(reader.body)?.[1] as string
    const readerId = (await h.ctx.tokens.browse(h.alice, {})).tokens.find(
      (t) => t.note === 'reader',
    )?.id as string
    const widened = await alice.post(`/account/tokens/${readerId}`, {
      note: 'reader',
      scopes: ['tokens:read', 'tokens:write'],
    })
    expect(widened.status).toBe(403)
    expect(confirmLinkOf(widened.body)).toBe(confirmAt(`/account/tokens/${readerId}`))
    const writer = await h.token('alice', ['tokens:write'])
    const rolled = await alice.post(`/account/tokens/${writer.id}/roll`, { when: 'now' })
    expect(rolled.status).toBe(403)
    expect(confirmLinkOf(rolled.body)).toBe(confirmAt(`/account/tokens/${writer.id}`))
    // Nothing was made, widened or rolled: alice's one token that makes tokens is the CLI's.
    const listed = await call(h.app, 'GET', '/tokens/v2/alice', readerString)
    expect(listed.status).toBe(200)
    const writers = listed.body.filter((t: { scopes: string[] }) =>
      t.scopes.includes('tokens:write'),
    )
    expect(writers.map((t: { id: string }) => t.id)).toEqual([writer.id])

    // The link keeps the form: confirmed, the holder is back on it as it was, and creates.
    const link = confirmLinkOf(tried.body) as string
    const next = new URL(link, 'https://tessera.test').searchParams.get('next') as string
    expect(next).toBe(
      '/account/tokens/new?note=backdoor&scopes=tokens%3Aread&scopes=tokens%3Awrite',
    )
    const confirmed = await alice.post('/account/settings/confirm', { next, password })
    expect([confirmed.status, confirmed.location]).toEqual([303, next])
    const again = await alice.get(next)
    expect(again.body).toContain('value="backdoor"')
    expect(again.body).toMatch(/value="tokens:write"[^>]*checked/)
    const made = await alice.post('/account/tokens/new', {
      note: 'backdoor',
      scopes: ['tokens:read', 'tokens:write'],
    })
    expect(made.status).toBe(200)
    expect(made.body).toMatch(/id="new-token"/)
  })
})

describe('Settings → Password is no guessing oracle', () => {
  let h: Harness

  beforeEach(async () => {
    h = await harness(sharedThrottle())
  })
  afterEach(() => h.close())

  it('25 wrong current passwords at once: 5 are checked, 20 get 429, and the right one is not checked either', async () => {
    const alice = await signedInHolder(h.app, h.ctx, 'alice', password)
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        alice.post('/account/settings/password', {
          current: `guess number ${i}`,
          password: 'mallory chose this one',
        }),
      ),
    )
    expect(tally(answers.map((a) => a.status))).toEqual({ 422: 5, 429: 20 })
    const refused = answers.find((a) => a.status === 429)
    expect(titleOf(refused?.body ?? '')).toBe('Too many attempts')
    expect(Number(refused?.headers['retry-after'])).toBeGreaterThan(0)
    // The right password is not checked until the window ends: nothing changes.
    const right = await alice.post('/account/settings/password', {
      current: password,
      password: 'mallory chose this one',
    })
    expect(right.status).toBe(429)
    expect(await h.ctx.holders.checkPassword('alice', password)).toBeDefined()
    // The failures count against the person: sign-in is throttled for them too.
    expect((await new DashboardClient(h.app, '192.0.2.50').signIn('alice', password)).status).toBe(
      429,
    )
  })

  it('a right current password gives its attempt back; the wrong ones before it still count', async () => {
    const alice = await signedInHolder(h.app, h.ctx, 'alice', password)
    const change = (current: string, next = 'a new and long password') =>
      alice.post('/account/settings/password', { current, password: next })
    for (let i = 0; i < 4; i++) expect((await change(`wrong ${i}`)).status).toBe(422)
    const changed = await change(password)
    expect([changed.status, changed.location]).toEqual([303, '/account/settings?done=password'])
    expect((await change('wrong again')).status).toBe(422)
    expect((await change('and again')).status).toBe(429)
  })
})
