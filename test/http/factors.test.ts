import { generateSync } from 'otplib'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { type Harness, harness } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { alertOf, DashboardClient, titleOf } from './dashboard-client.js'

const password = 'correct horse battery staple'
const step = 30_000

describe('two-step sign-in: authenticator codes, recovery codes, policy', () => {
  let h: Harness

  const codeAt = (secret: string, ms = h.clock.now) =>
    generateSync({ secret, epoch: Math.floor(ms / 1000) })

  /**
   * A code that is not right now: not the app's, nor a step before or after (taken for clock
   * drift). A fixed one such as 000000 is right once in about 330,000 secrets.
   */
  const wrongCode = (secret: string) => {
    const right = new Set([-1, 0, 1].map((k) => codeAt(secret, h.clock.now + k * step)))
    return ['000000', '123456', '999999'].find((c) => !right.has(c)) as string
  }

  /** A holder with a password, signed in. */
  const holder = async (username: string) => {
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite(username, cliActor)
    await b.post(`/account/setup/${link}`, { password, confirm: password })
    await b.get('/account')
    return b
  }

  /** Enrols an authenticator app: its secret and the recovery codes shown. */
  const enrol = async (b: DashboardClient) => {
    const page = await b.get('/account/settings/totp')
    expect(page.status).toBe(200)
    expect(titleOf(page.body)).toBe('Set up an authenticator app')
    expect(page.body).toContain('<svg xmlns="http://www.w3.org/2000/svg"')
    const secret = (/<code class="secret">([^<]+)<\/code>/.exec(page.body)?.[1] ?? '').replace(
      / /g,
      '',
    )
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/)
    const wrong = await b.post('/account/settings/totp', { code: wrongCode(secret) })
    expect(wrong.status).toBe(422)
    expect(alertOf(wrong.body)).toBe('That code is not right. Enter the code the app shows now.')
    const done = await b.post('/account/settings/totp', { code: codeAt(secret) })
    expect(done.status).toBe(200)
    expect(titleOf(done.body)).toBe('Your recovery codes')
    const codes = [...done.body.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map(
      (m) => m[1] as string,
    )
    expect(codes).toHaveLength(10)
    return { secret, codes }
  }

  /** Password first: answers the client, on its way to the second step. */
  const password1 = async (login: string) => {
    const b = new DashboardClient(h.app)
    const res = await b.signIn(login, password)
    expect([res.status, res.location]).toEqual([303, '/account/sign-in/verify'])
    expect(b.cookie).toBeUndefined()
    return b
  }

  beforeEach(async () => {
    h = await harness(adminEnv)
  })
  afterEach(() => h.close())

  it('asks for a code after the password; refuses a wrong, a replayed and an old code', async () => {
    const b = await holder('alice')
    const { secret } = await enrol(b)
    h.clock.now += 2 * step

    const c = await password1('alice')
    const page = await c.get('/account/sign-in/verify')
    expect(titleOf(page.body)).toBe('Two-step sign-in')
    const refusals = [wrongCode(secret), codeAt(secret, h.clock.now - 2 * step), 'not a code']
    for (const code of refusals) {
      const res = await c.post('/account/sign-in/verify', { code })
      expect(res.status, code).toBe(401)
      expect(alertOf(res.body)).toBe('That code is not right')
      expect(c.cookie).toBeUndefined()
    }
    const code = codeAt(secret)
    const ok = await c.post('/account/sign-in/verify', { code })
    expect([ok.status, ok.location]).toEqual([303, '/account'])
    expect((await c.get('/account')).status).toBe(200)

    // The same code again, in the same window: a replay.
    const d = await password1('alice')
    expect((await d.post('/account/sign-in/verify', { code })).status).toBe(401)
    h.clock.now += step
    expect((await d.post('/account/sign-in/verify', { code: codeAt(secret) })).status).toBe(303)
    // The pending sign-in was used: its cookie opens nothing any more.
    const stale = await d.post('/account/sign-in/verify', { code: codeAt(secret) })
    expect(stale.status).toBe(410)

    const events = (
      await admin(
        h.app,
        'GET',
        '/accounts/alice/audit?action=signin.succeeded,signin.failed,factor.added',
      )
    ).body
    expect(
      events.slice(0, 3).map((e: { action: string; details?: unknown }) => [e.action, e.details]),
    ).toEqual([
      ['signin.succeeded', { secondFactor: 'totp' }],
      ['signin.failed', { secondFactor: true }],
      ['signin.succeeded', { secondFactor: 'totp' }],
    ])
  })

  it('takes a recovery code once, and counts failures in the sign-in throttle', async () => {
    const b = await holder('alice')
    const { codes, secret } = await enrol(b)
    const [first = '', second = ''] = codes
    const c = await password1('alice')
    expect((await c.post('/account/sign-in/verify', { code: first.toUpperCase() })).status).toBe(
      303,
    )
    const d = await password1('alice')
    expect((await d.post('/account/sign-in/verify', { code: first })).status).toBe(401)
    expect((await d.post('/account/sign-in/verify', { code: second })).status).toBe(303)
    const used = (await admin(h.app, 'GET', '/accounts/alice/audit?action=recovery_code.used')).body
    expect(used.map((e: { details: unknown }) => e.details)).toEqual([{ left: 8 }, { left: 9 }])

    // Five failures for the person: the sixth attempt is not even checked.
    const e = await password1('alice')
    for (let i = 0; i < 5; i++) {
      expect((await e.post('/account/sign-in/verify', { code: wrongCode(secret) })).status).toBe(
        401,
      )
    }
    const throttled = await e.post('/account/sign-in/verify', { code: codes[2] as string })
    expect(throttled.status).toBe(429)
    expect(throttled.headers['retry-after']).toBeDefined()
  })

  it('answers 500 and logs it when an authenticator secret can no longer be read', async () => {
    const b = await holder('alice')
    const { secret } = await enrol(b)
    // The sealed secret damaged (or its signing key gone): a fault of ours, not the person's.
    await h.ctx.db
      .updateTable('factors')
      .set({ secret: 'v1.damaged' })
      .where('login', '=', 'alice')
      .execute()
    const logged = vi.spyOn(h.ctx.log, 'error')
    const c = await password1('alice')
    const res = await c.post('/account/sign-in/verify', { code: codeAt(secret) })
    expect(res.status).toBe(500)
    expect(titleOf(res.body)).toBe('Something went wrong')
    expect(c.cookie).toBeUndefined()
    expect(logged.mock.calls.map(([, message]) => message)).toEqual(['dashboard error'])
  })

  it('holds a member without a factor on enrolment while the account requires one', async () => {
    const owner = await holder('alice')
    const invited = await admin(h.app, 'POST', '/accounts/alice/members', {
      email: 'dana@example.com',
      role: 'developer',
    })
    const dana = new DashboardClient(h.app)
    await dana.post(new URL(invited.body.invitationUrl).pathname, {
      login: 'dana',
      password,
      confirm: password,
    })
    const members = await owner.get('/account/members')
    expect(members.body).toContain('Require two-step sign-in')
    const saved = await owner.post('/account/members/policy', { require2fa: 'on' })
    expect(saved.location).toBe('/account/members?done=policy')

    // Every page leads to enrolment; every POST but enrolment is refused.
    for (const path of ['/account', '/account/members', '/account/settings', '/account/scopes']) {
      expect((await dana.get(path)).location, path).toBe('/account/settings/totp')
    }
    const page = await dana.get('/account/settings/totp')
    expect(page.body).toContain('Your account requires a second factor: set one up to go on.')
    const refused = await dana.post('/account/tokens/new', { note: 'x' })
    expect(refused.status).toBe(403)
    const secret = (/<code class="secret">([^<]+)<\/code>/.exec(page.body)?.[1] ?? '').replace(
      / /g,
      '',
    )
    expect((await dana.post('/account/settings/totp', { code: codeAt(secret) })).status).toBe(200)
    expect((await dana.get('/account')).status).toBe(200)
    // The last factor stays while the policy requires one.
    const settings = await dana.get('/account/settings')
    const id = /\/account\/settings\/factors\/([^/]+)\/remove/.exec(settings.body)?.[1] as string
    const remove = await dana.post(`/account/settings/factors/${id}/remove`, {})
    expect(remove.location).toBe('/account/settings?refused=last')
    expect(alertOf((await dana.get(remove.location as string)).body)).toBe(
      'Your account requires a second factor: add another before you remove this one.',
    )

    // Single sign-on is the platform's own assurance: not held.
    const { id: ssoSession } = await h.ctx.holders.startSession('dana', 'alice', 'sso')
    const viaSso = new DashboardClient(h.app)
    viaSso.cookie = `__Host-tessera_session=${ssoSession}`
    expect((await viaSso.get('/account/members')).status).toBe(200)

    // A portal link's session is the platform's own assurance: not held.
    const portal = await admin(h.app, 'POST', '/accounts/alice/portal-links', {
      email: 'pat@example.com',
      role: 'viewer',
    })
    const pat = new DashboardClient(h.app)
    expect((await pat.post(new URL(portal.body.url).pathname, {})).location).toBe('/account')
    expect((await pat.get('/account')).status).toBe(200)
    const policy = (await admin(h.app, 'GET', '/accounts/alice/audit?action=policy.changed')).body
    expect(policy.map((e: { details: unknown }) => e.details)).toEqual([{ require2fa: true }])
  })
})

describe('DASHBOARD_REQUIRE_2FA', () => {
  let h: Harness
  beforeEach(async () => {
    h = await harness({ DASHBOARD_REQUIRE_2FA: '1' })
  })
  afterEach(() => h.close())

  it('holds every password sign-in without a factor, in every account', async () => {
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite('bob', cliActor)
    expect((await b.post(`/account/setup/${link}`, { password, confirm: password })).status).toBe(
      303,
    )
    expect((await b.get('/account')).location).toBe('/account/settings/totp')
    const members = await b.get('/account/settings/totp')
    expect(members.status).toBe(200)
    // Signing out is always possible.
    expect((await b.post('/account/sign-out', {})).location).toBe('/account/sign-in')
  })
})
