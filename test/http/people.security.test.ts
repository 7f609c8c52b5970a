import { generateSync } from 'otplib'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { type Harness, harness } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { alertOf, DashboardClient, signedInHolder, titleOf } from './dashboard-client.js'
import { sharedThrottle, tally } from './throttle-helpers.js'

const password = 'correct horse battery staple'
const mallorys = 'mallory knows this one'
const invitationPath = (body: string) =>
  /\/account\/invitations\/[A-Za-z0-9_-]{43}/.exec(body)?.[0] as string
const anonymous = { type: 'anonymous' as const }

/**
 * The people side as an attacker sees it: the owner of one account (bob, played by mallory)
 * trying to take a seat in another (alice) through emails nobody proved.
 */
describe('people: an owner of one account cannot take a seat in another', () => {
  let h: Harness
  let mallory: DashboardClient

  const holder = (username: string) => signedInHolder(h.app, h.ctx, username, password)

  /** Mallory invites `email` to her own account and accepts it herself as `login`. */
  const squat = async (email: string, login: string) => {
    const made = await mallory.post('/account/members/invite', { email, role: 'viewer' })
    expect(made.status).toBe(200)
    const path = invitationPath(made.body)
    const joined = await new DashboardClient(h.app).post(path, {
      login,
      password: mallorys,
      confirm: mallorys,
    })
    expect([joined.status, joined.location]).toEqual([303, '/account'])
  }

  const members = async (username: string) =>
    (await admin(h.app, 'GET', `/accounts/${username}/members`)).body.map(
      (m: { login: string; email?: string; role: string }) => [m.login, m.email ?? null, m.role],
    )

  beforeEach(async () => {
    h = await harness(adminEnv)
    mallory = await holder('bob')
  })
  afterEach(() => h.close())

  it("a portal link for alice never signs in a person another account's invitation made", async () => {
    await squat('victim@acme.example', 'squatter')
    const made = await admin(h.app, 'POST', '/accounts/alice/portal-links', {
      email: 'victim@acme.example',
      role: 'developer',
    })
    expect(made.status).toBe(201)
    const victim = new DashboardClient(h.app)
    const used = await victim.post(new URL(made.body.url).pathname, {})
    expect([used.status, used.location]).toEqual([303, '/account'])

    // The victim is a new person of alice's; the squatter stays where mallory put them.
    expect(await members('alice')).toEqual([
      ['alice', null, 'owner'],
      ['victim', 'victim@acme.example', 'developer'],
    ])
    expect(await h.ctx.members.memberships('squatter')).toEqual([
      { username: 'bob', role: 'viewer' },
    ])
    // Mallory signs in as the squatter: bob's tokens only, alice refused.
    const as = new DashboardClient(h.app)
    const signedIn = await as.post('/account/sign-in', { username: 'squatter', password: mallorys })
    expect([signedIn.status, signedIn.location]).toEqual([303, '/account'])
    const page = await as.get('/account')
    expect(page.body).toContain(h.bob.defaultToken.id)
    expect(page.body).not.toContain(h.alice.defaultToken.id)
    expect((await as.post('/account/accounts', { account: 'alice' })).status).toBe(403)
  })

  it('single sign-on never links a verified identity to a person whose email nobody proved', async () => {
    await squat('newhire@acme.example', 'squat2')
    const invited = await admin(h.app, 'POST', '/accounts/alice/members', {
      email: 'newhire@acme.example',
      role: 'developer',
    })
    expect(invited.status).toBe(201)
    const identity = {
      issuer: 'https://id.acme.example',
      subject: 'newhire-1',
      email: 'NewHire@acme.example',
      emailVerified: true,
    }
    const person = await h.ctx.members.ssoPerson(identity, anonymous)
    expect(person?.login).toBe('newhire')
    expect(person?.email_proof).toBe('sso')
    const squatter = await h.ctx.members.person('squat2')
    expect([squatter?.oidc_issuer, squatter?.oidc_subject]).toEqual([null, null])
    expect(await h.ctx.members.memberships('newhire')).toEqual([
      { username: 'alice', role: 'developer' },
    ])
    expect(await h.ctx.members.memberships('squat2')).toEqual([{ username: 'bob', role: 'viewer' }])
    // The next sign-in is the same person, by the identity alone.
    expect((await h.ctx.members.ssoPerson(identity, anonymous))?.login).toBe('newhire')
  })

  it('single sign-on links a person a portal link made (the platform vouched for the email)', async () => {
    const made = await admin(h.app, 'POST', '/accounts/alice/portal-links', {
      email: 'pat@acme.example',
      role: 'viewer',
    })
    await new DashboardClient(h.app).post(new URL(made.body.url).pathname, {})
    expect((await h.ctx.members.person('pat'))?.email_proof).toBe('portal')
    const identity = {
      issuer: 'https://id.acme.example',
      subject: 'pat-1',
      email: 'pat@acme.example',
      emailVerified: true,
    }
    expect((await h.ctx.members.ssoPerson(identity, anonymous))?.login).toBe('pat')
    const unverified = { ...identity, subject: 'pat-2', emailVerified: false }
    expect(await h.ctx.members.ssoPerson(unverified, anonymous)).toBeUndefined()
  })

  it("a portal link's page names the account, the person and the role before Continue", async () => {
    const made = await admin(h.app, 'POST', '/accounts/alice/portal-links', {
      email: 'Pat@Acme.example',
      role: 'developer',
    })
    const b = new DashboardClient(h.app)
    const page = await b.get(new URL(made.body.url).pathname)
    expect(page.status).toBe(200)
    expect(page.body).toContain(
      '<p>This link signs you in to the account <strong>alice</strong> as <strong>pat@acme.example</strong>, with the role <strong>developer</strong>.</p>',
    )
    await b.post(new URL(made.body.url).pathname, {})
    // Every page after it says which account this is, and who.
    expect((await b.get('/account/settings')).body).toContain(
      'alice <span class="login">(pat)</span>',
    )
  })

  it('a portal link matches a member of its own account by email, and nobody elsewhere', async () => {
    const link = async (username: string, role: string) => {
      const made = await admin(h.app, 'POST', `/accounts/${username}/portal-links`, {
        email: 'pat@acme.example',
        role,
      })
      const used = await new DashboardClient(h.app).post(new URL(made.body.url).pathname, {})
      expect(used.status).toBe(303)
    }
    await link('alice', 'developer')
    await link('alice', 'viewer')
    await link('bob', 'owner')
    expect(await members('alice')).toEqual([
      ['alice', null, 'owner'],
      ['pat', 'pat@acme.example', 'viewer'],
    ])
    expect(await members('bob')).toEqual([
      ['bob', null, 'owner'],
      ['pat-2', 'pat@acme.example', 'owner'],
    ])
  })
})

describe('the sign-in throttle holds against concurrent attempts', () => {
  let h: Harness
  const step = 30_000
  const codeAt = (secret: string) => generateSync({ secret, epoch: Math.floor(h.clock.now / 1000) })
  const wrongCode = (secret: string) => {
    const right = new Set(
      [-1, 0, 1].map((k) =>
        generateSync({ secret, epoch: Math.floor((h.clock.now + k * step) / 1000) }),
      ),
    )
    return ['000000', '123456', '999999'].find((c) => !right.has(c)) as string
  }

  const shared = 'REDIS_URL' in sharedThrottle()

  beforeEach(async () => {
    h = await harness(sharedThrottle())
    const link = await h.ctx.holders.invite('alice', cliActor)
    const b = new DashboardClient(h.app)
    expect((await b.post(`/account/setup/${link}`, { password, confirm: password })).status).toBe(
      303,
    )
  })
  afterEach(() => h.close())

  it('40 wrong passwords at once for one username: 5 are checked, 35 get 429', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        new DashboardClient(h.app, `192.0.2.${i + 1}`).signIn('alice', `wrong ${i}`),
      ),
    )
    expect(tally(answers.map((a) => a.status))).toEqual({ 401: 5, 429: 35 })
    // The right password is not checked either, until the window ends.
    expect((await new DashboardClient(h.app, '192.0.2.99').signIn('alice', password)).status).toBe(
      429,
    )
    const failures = await h.ctx.audit.list({ actions: ['signin.failed'], limit: 100 })
    expect(failures).toHaveLength(5)
  })

  it('40 wrong passwords at once from one address for many usernames: 20 are checked', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        new DashboardClient(h.app, '198.51.100.7').signIn(`nobody${i}`, 'wrong'),
      ),
    )
    expect(tally(answers.map((a) => a.status))).toEqual({ 401: 20, 429: 20 })
  })

  it('a right password gives its attempt back: failures before it still count', async () => {
    const b = new DashboardClient(h.app, '203.0.113.5')
    for (let i = 0; i < 4; i++) expect((await b.signIn('alice', 'wrong')).status).toBe(401)
    // A success clears the username's count; the address keeps its four failures.
    expect((await b.signIn('alice', password)).status).toBe(303)
    for (let i = 0; i < 5; i++) {
      expect(
        (await new DashboardClient(h.app, '203.0.113.5').signIn('alice', 'wrong')).status,
      ).toBe(401)
    }
    expect((await new DashboardClient(h.app, '203.0.113.6').signIn('alice', 'wrong')).status).toBe(
      429,
    )
  })

  it('40 wrong second-step codes at once: 5 are checked, 35 get 429', async () => {
    const b = new DashboardClient(h.app)
    await b.signIn('alice', password)
    await b.get('/account')
    const page = await b.get('/account/settings/totp')
    const secret = (/<code class="secret">([^<]+)<\/code>/.exec(page.body)?.[1] ?? '').replace(
      / /g,
      '',
    )
    expect((await b.post('/account/settings/totp', { code: codeAt(secret) })).status).toBe(200)
    const pending = new DashboardClient(h.app)
    const first = await pending.signIn('alice', password)
    expect([first.status, first.location]).toEqual([303, '/account/sign-in/verify'])
    const wrong = wrongCode(secret)
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => pending.post('/account/sign-in/verify', { code: wrong })),
    )
    expect(tally(answers.map((a) => a.status))).toEqual({ 401: 5, 429: 35 })
  })

  it('40 refused passkey sign-ins at once from one address: 20 are checked', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        new DashboardClient(h.app, '198.51.100.9').post('/account/passkeys/signin', {
          response: '{}',
        }),
      ),
    )
    expect(tally(answers.map((a) => a.status))).toEqual({ 401: 20, 429: 20 })
  })

  it('anonymous passkey challenges: 30 an address in 15 minutes, each a row at most', async () => {
    const ask = (ip: string) =>
      new DashboardClient(h.app, ip).post('/account/passkeys/signin/options', {})
    const answers = await Promise.all(Array.from({ length: 50 }, () => ask('198.51.100.10')))
    expect(tally(answers.map((a) => a.status))).toEqual({ 200: 30, 429: 20 })
    const refused = answers.find((a) => a.status === 429)
    expect(JSON.parse(refused?.body ?? '{}')).toEqual({
      message: 'Too many passkey sign-ins from this address: try again later.',
    })
    // Redis keeps its own time; in process the window follows the test's clock exactly.
    const retryAfter = Number(refused?.headers['retry-after'])
    if (shared) expect(retryAfter).toBeGreaterThan(15 * 60 - 30)
    else expect(retryAfter).toBe(15 * 60)
    const rows = await h.ctx.db
      .selectFrom('webauthn_challenges')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    expect(Number(rows.n)).toBe(30)
    // Another address has its own allowance; 15 minutes later this one has it again.
    expect((await ask('198.51.100.11')).status).toBe(200)
    if (shared) return
    h.clock.now += 15 * 60_000
    expect((await ask('198.51.100.10')).status).toBe(200)
  })
})

describe('sign-in methods change only with a recent proof; policies hold however one came', () => {
  let h: Harness
  const minute = 60_000

  const holder = (username: string) => signedInHolder(h.app, h.ctx, username, password)
  const enrolTotp = async (b: DashboardClient) => {
    const page = await b.get('/account/settings/totp')
    expect(page.status).toBe(200)
    const secret = (/<code class="secret">([^<]+)<\/code>/.exec(page.body)?.[1] ?? '').replace(
      / /g,
      '',
    )
    const code = generateSync({ secret, epoch: Math.floor(h.clock.now / 1000) })
    expect((await b.post('/account/settings/totp', { code })).status).toBe(200)
    return secret
  }
  const confirmAt = (next: string) => `/account/settings/confirm?next=${encodeURIComponent(next)}`

  beforeEach(async () => {
    h = await harness(adminEnv)
  })
  afterEach(() => h.close())

  it('a session 10 minutes after its sign-in must confirm before adding or removing a method', async () => {
    const b = await holder('alice')
    await enrolTotp(b)
    h.clock.now += 10 * minute
    // A stolen cookie is not a proof: every change of a sign-in method asks for one first.
    const totp = await b.get('/account/settings/totp')
    expect([totp.status, totp.location]).toEqual([303, confirmAt('/account/settings/totp')])
    const options = await b.post('/account/passkeys/register/options', {})
    expect(options.status).toBe(403)
    expect(JSON.parse(options.body)).toEqual({
      message: "Confirm it's you first: sign-in methods change only with a recent proof.",
      confirm: confirmAt('/account/settings'),
    })
    for (const path of [
      '/account/passkeys/register',
      '/account/settings/recovery-codes',
      '/account/settings/factors/anything/remove',
      '/account/settings/totp',
    ]) {
      const res = await b.post(path, { name: 'mine', response: '{}', code: '123456' })
      expect([res.status, res.location], path).toEqual([303, confirmAt('/account/settings')])
    }
    expect((await h.ctx.factors.list('alice')).map((f) => f.kind)).toEqual(['totp'])

    const page = await b.get(confirmAt('/account/settings/totp'))
    expect(page.status).toBe(200)
    expect(titleOf(page.body)).toBe('Confirm it&#39;s you')
    const wrong = await b.post('/account/settings/confirm', {
      next: '/account/settings/totp',
      password: 'not my password at all',
    })
    expect(wrong.status).toBe(401)
    expect(alertOf(wrong.body)).toBe('That password or code is not right')
    const right = await b.post('/account/settings/confirm', {
      next: '/account/settings/totp',
      password,
    })
    expect([right.status, right.location]).toEqual([303, '/account/settings/totp'])
    expect((await b.get('/account/settings/totp')).status).toBe(200)
    // The proof lasts 10 minutes, then it is asked for again.
    h.clock.now += 10 * minute
    expect((await b.get('/account/settings/totp')).location).toBe(
      confirmAt('/account/settings/totp'),
    )
  })

  it('a portal-link session registers no passkey once its sign-in is 10 minutes old', async () => {
    const made = await admin(h.app, 'POST', '/accounts/alice/portal-links', {
      email: 'pat@acme.example',
      role: 'developer',
    })
    const b = new DashboardClient(h.app)
    expect((await b.post(new URL(made.body.url).pathname, {})).status).toBe(303)
    await b.get('/account')
    h.clock.now += 10 * minute
    expect((await b.post('/account/passkeys/register/options', {})).status).toBe(403)
    const page = await b.get(confirmAt('/account/settings'))
    expect(page.body).toContain(
      'You signed in with a link from your platform: open a new one there to go on.',
    )
    expect(page.body).not.toContain('id="confirm-password"')
    // Nothing it can type proves it: no password, no code.
    const tried = await b.post('/account/settings/confirm', {
      next: '/account/settings',
      password: 'x',
    })
    expect(tried.status).toBe(401)
    expect((await b.post('/account/passkeys/register/options', {})).status).toBe(403)
  })

  it('a portal-link session of another account enters one that requires a second factor held, as a password would', async () => {
    const alice = await holder('alice')
    const bob = await holder('bob')
    const invited = await alice.post('/account/members/invite', {
      email: 'pete@acme.example',
      role: 'developer',
    })
    const pete = new DashboardClient(h.app)
    const path = invitationPath(invited.body)
    expect((await pete.post(path, { login: 'pete', password, confirm: password })).status).toBe(303)
    await pete.get('/account')
    const toBob = await bob.post('/account/members/invite', {
      email: 'pete@acme.example',
      role: 'viewer',
    })
    await pete.get(invitationPath(toBob.body))
    const joined = await pete.post(invitationPath(toBob.body), { as: 'pete' })
    expect(joined.status).toBe(303)
    expect(await h.ctx.members.memberships('pete')).toEqual([
      { username: 'alice', role: 'developer' },
      { username: 'bob', role: 'viewer' },
    ])
    expect((await alice.post('/account/members/policy', { require2fa: 'on' })).status).toBe(303)

    // Bob's platform signs pete in to bob with a link; he switches to alice.
    const made = await admin(h.app, 'POST', '/accounts/bob/portal-links', {
      email: 'pete@acme.example',
      role: 'viewer',
    })
    const viaLink = new DashboardClient(h.app)
    const used = await viaLink.post(new URL(made.body.url).pathname, {})
    expect(used.location).toBe('/account')
    expect((await viaLink.get('/account')).status).toBe(200)
    const switched = await viaLink.post('/account/accounts', { account: 'alice', next: '/account' })
    expect(switched.location).toBe('/account')
    const held = await viaLink.get('/account')
    expect([held.status, held.location]).toEqual([303, '/account/settings/totp'])
    const refused = await viaLink.post('/account/tokens/new', { note: 'x', scopes: 'tokens:read' })
    expect(refused.status).toBe(403)
  })

  it('a member held on enrolment by a policy can still confirm, then enrol, after 10 minutes', async () => {
    const alice = await holder('alice')
    expect((await alice.post('/account/members/policy', { require2fa: 'on' })).status).toBe(303)
    h.clock.now += 10 * minute
    const held = await alice.get('/account')
    expect(held.location).toBe('/account/settings/totp')
    expect((await alice.get('/account/settings/totp')).location).toBe(
      confirmAt('/account/settings/totp'),
    )
    expect((await alice.get(confirmAt('/account/settings/totp'))).status).toBe(200)
    const confirmed = await alice.post('/account/settings/confirm', {
      next: '/account/settings/totp',
      password,
    })
    expect(confirmed.location).toBe('/account/settings/totp')
    await enrolTotp(alice)
    expect((await alice.get('/account')).status).toBe(200)
  })

  it('a setup link sets the password, then asks for the second factor its holder has', async () => {
    const b = await holder('alice')
    const secret = await enrolTotp(b)
    const link = await h.ctx.holders.invite('alice', cliActor)
    const fresh = new DashboardClient(h.app)
    const set = await fresh.post(`/account/setup/${link}`, {
      password: 'another long password',
      confirm: 'another long password',
    })
    expect([set.status, set.location]).toEqual([303, '/account/sign-in/verify'])
    expect(fresh.cookie).toBeUndefined()
    expect((await fresh.get('/account')).location).toBe('/account/sign-in')
    h.clock.now += 30_000
    const code = generateSync({ secret, epoch: Math.floor(h.clock.now / 1000) })
    const verified = await fresh.post('/account/sign-in/verify', { code })
    expect([verified.status, verified.location]).toEqual([303, '/account'])
    expect((await fresh.get('/account')).status).toBe(200)
  })
})

describe('OIDC_ONLY', () => {
  let h: Harness
  beforeEach(async () => {
    h = await harness({
      OIDC_ISSUER: 'https://127.0.0.1:9',
      OIDC_CLIENT_ID: 'tessera',
      OIDC_CLIENT_SECRET: 'a secret of the provider',
      OIDC_ONLY: '1',
    })
  })
  afterEach(() => h.close())

  it('refuses the password of a person the provider signs in, and the confirmation by it', async () => {
    const link = await h.ctx.holders.invite('alice', cliActor)
    const b = new DashboardClient(h.app)
    expect((await b.post(`/account/setup/${link}`, { password, confirm: password })).status).toBe(
      303,
    )
    // As a person linked before OIDC_ONLY was set would be: a password and an identity.
    await h.ctx.db
      .updateTable('people')
      .set({ oidc_issuer: 'https://127.0.0.1:9', oidc_subject: 'alice-1' })
      .where('login', '=', 'alice')
      .execute()
    expect((await new DashboardClient(h.app).signIn('alice', password)).status).toBe(401)
    await b.get('/account')
    h.clock.now += 10 * 60_000
    const tried = await b.post('/account/settings/confirm', { next: '/account/settings', password })
    expect(tried.status).toBe(401)
  })
})
