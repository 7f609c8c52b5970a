import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { alertOf, DashboardClient, titleOf } from './dashboard-client.js'

const password = 'correct horse battery staple'
const minute = 60_000
const linkPath = (body: string, kind: 'invitations' | 'portal') =>
  new RegExp(`/account/${kind}/[A-Za-z0-9_-]{43}`).exec(body)?.[0] as string

/** The forms of a page that post somewhere (sign-out aside). */
const postForms = (body: string) =>
  [...body.matchAll(/<form method="post" action="([^"]+)"/g)]
    .map((m) => m[1])
    .filter((action) => action !== '/account/sign-out')

describe('members and roles', () => {
  let h: Harness
  let owner: DashboardClient

  /** A holder's password by setup link, then a signed-in browser on the tokens page. */
  const holder = async (username: string) => {
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite(username, cliActor)
    expect((await b.post(`/account/setup/${link}`, { password, confirm: password })).status).toBe(
      303,
    )
    await b.get('/account')
    return b
  }

  /** The owner invites `email` as `role`; a new browser joins as `login`. */
  const join = async (inviter: DashboardClient, email: string, role: string, login: string) => {
    const made = await inviter.post('/account/members/invite', { email, role })
    expect(made.status).toBe(200)
    const path = linkPath(made.body, 'invitations')
    const b = new DashboardClient(h.app)
    const page = await b.get(path)
    expect(page.status).toBe(200)
    const joined = await b.post(path, { login, password, confirm: password })
    expect(joined.status).toBe(303)
    expect(joined.location).toBe('/account')
    await b.get('/account')
    return { browser: b, path }
  }

  const readers = new Map<string, string>()
  /** The ids of the account's tokens, through the API (with one reader token of its own). */
  const tokenIds = async (username: string) => {
    const reader = readers.get(username) ?? (await h.token(username, ['tokens:read'])).token
    readers.set(username, reader)
    const res = await call(h.app, 'GET', `/tokens/v2/${username}`, reader)
    return res.body.map((t: { id: string }) => t.id) as string[]
  }

  beforeEach(async () => {
    readers.clear()
    h = await harness({ ...adminEnv, PORTAL_RETURN_ORIGINS: 'https://platform.example' })
    owner = await holder('alice')
  })
  afterEach(() => h.close())

  it("makes each account's holder its first owner, the account's name as login", async () => {
    const res = await admin(h.app, 'GET', '/accounts/alice/members')
    expect(res.status).toBe(200)
    expect(res.body).toEqual([
      { login: 'alice', role: 'owner', created: new Date(T0).toISOString(), sso: false },
    ])
    expect((await admin(h.app, 'GET', '/accounts/nobody/members')).body).toEqual({
      message: 'No such user',
      details: 'no such account: nobody',
    })
  })

  it('invites a developer and a viewer, who get exactly what their role allows', async () => {
    const dev = (await join(owner, 'Dana@Example.com', 'developer', 'dana')).browser
    const viewer = (await join(owner, 'vic@example.com', 'viewer', 'vic')).browser
    expect((await admin(h.app, 'GET', '/accounts/alice/members')).body).toEqual([
      { login: 'alice', role: 'owner', created: new Date(T0).toISOString(), sso: false },
      {
        login: 'dana',
        email: 'dana@example.com',
        role: 'developer',
        created: new Date(T0).toISOString(),
        sso: false,
      },
      {
        login: 'vic',
        email: 'vic@example.com',
        role: 'viewer',
        created: new Date(T0).toISOString(),
        sso: false,
      },
    ])

    // The developer makes a secret token and sees it once.
    const made = await dev.post('/account/tokens/new', {
      note: 'server',
      scopes: ['styles:read', 'tokens:write'],
    })
    expect(made.status).toBe(200)
    expect(made.body).toMatch(/value="sk\.[^"]+"/)
    // ...but cannot invite: that is an owner's.
    const invite = await dev.post('/account/members/invite', {
      email: 'x@example.com',
      role: 'owner',
    })
    expect(invite.status).toBe(403)
    expect(titleOf(invite.body)).toBe('Request refused')

    // The viewer reads every page; none carries an sk string or a form that changes anything.
    const ids = await tokenIds('alice')
    const sk = ids.find((id) => made.body.includes(id)) as string
    for (const path of [
      '/account',
      `/account/tokens/${sk}`,
      '/account/scopes',
      '/account/activity',
      '/account/members',
    ]) {
      const page = await viewer.get(path)
      expect(page.status, path).toBe(200)
      expect(page.body, path).not.toMatch(/sk\.[A-Za-z0-9_-]{20}/)
      expect(postForms(page.body), path).toEqual([])
    }
    expect((await viewer.get('/account')).body).not.toContain('Create a token')
    for (const path of [
      '/account/tokens/new',
      '/account/temporary',
      `/account/tokens/${sk}/delete`,
    ]) {
      expect((await viewer.get(path)).status, path).toBe(403)
    }
    // Every change refused with 403, nothing changed.
    const before = await tokenIds('alice')
    const refused = [
      await viewer.post('/account/tokens/new', { note: 'x', scopes: ['styles:read'] }),
      await viewer.post(`/account/tokens/${sk}`, { note: 'renamed', scopes: ['styles:read'] }),
      await viewer.post(`/account/tokens/${sk}/delete`, {}),
      await viewer.post('/account/temporary', { scopes: ['styles:read'], minutes: '5' }),
      await viewer.post('/account/members/invite', { email: 'x@example.com', role: 'owner' }),
      await viewer.post('/account/members/vic/role', { role: 'owner' }),
      await viewer.post('/account/members/alice/remove', {}),
    ]
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 403, 403, 403, 403])
    expect(await tokenIds('alice')).toEqual(before)
    expect(before).toContain(sk)
    expect(
      (await admin(h.app, 'GET', '/accounts/alice/members')).body.map(
        (m: { role: string }) => m.role,
      ),
    ).toEqual(['owner', 'developer', 'viewer'])
    // Their own password is theirs to change. (No passkey form: these requests reach the server
    // as tessera.test, not at its origin, https://localhost:8443, where passkeys work.)
    const settings = await viewer.get('/account/settings')
    expect(postForms(settings.body)).toEqual([
      '/account/settings/password',
      '/account/sign-out-everywhere',
    ])
  })

  it('ends the sessions of a member whose role changes or who is removed, at once', async () => {
    const dev = (await join(owner, 'dana@example.com', 'developer', 'dana')).browser
    const viewer = (await join(owner, 'vic@example.com', 'viewer', 'vic')).browser
    expect((await dev.get('/account')).status).toBe(200)

    const changed = await owner.post('/account/members/dana/role', { role: 'viewer' })
    expect(changed.location).toBe('/account/members?done=role')
    expect((await dev.get('/account')).location).toBe('/account/sign-in')
    const again = new DashboardClient(h.app)
    expect((await again.signIn('dana', password)).location).toBe('/account')
    expect((await again.post('/account/tokens/new', { note: 'x' })).status).toBe(403)

    const removed = await owner.post('/account/members/vic/remove', {})
    expect(removed.location).toBe('/account/members?done=removed')
    expect((await viewer.get('/account')).location).toBe('/account/sign-in')
    // Vic belongs to no account now: signing in fails as a wrong password does.
    const vic = await new DashboardClient(h.app).signIn('vic', password)
    expect(vic.status).toBe(401)
    expect(alertOf(vic.body)).toBe('Wrong username or password')
    const list = (await admin(h.app, 'GET', '/accounts/alice/members')).body
    expect(list.map((m: { login: string; role: string }) => [m.login, m.role])).toEqual([
      ['alice', 'owner'],
      ['dana', 'viewer'],
    ])
  })

  it('keeps at least one owner in every account', async () => {
    const alone = await owner.post('/account/members/alice/remove', {})
    expect(alone.status).toBe(409)
    expect(alertOf(alone.body)).toBe('An account must keep at least one owner.')
    expect((await owner.post('/account/members/alice/role', { role: 'viewer' })).status).toBe(409)
    expect(await admin(h.app, 'DELETE', '/accounts/alice/members/alice')).toMatchObject({
      status: 409,
      body: {
        message: 'an account must keep an owner',
        details: 'an account must keep at least one owner',
      },
    })
    // With a second owner, the first may go; their session ends.
    await join(owner, 'olga@example.com', 'owner', 'olga')
    expect((await admin(h.app, 'DELETE', '/accounts/alice/members/alice')).status).toBe(204)
    expect((await owner.get('/account')).location).toBe('/account/sign-in')
    expect((await admin(h.app, 'GET', '/accounts/alice/members')).body).toEqual([
      {
        login: 'olga',
        email: 'olga@example.com',
        role: 'owner',
        created: new Date(T0).toISOString(),
        sso: false,
      },
    ])
  })

  it('lets a person in two accounts pick one after signing in, and switch', async () => {
    const bob = await holder('bob')
    const made = await bob.post('/account/members/invite', {
      email: 'alice@example.com',
      role: 'viewer',
    })
    const path = linkPath(made.body, 'invitations')
    // Signed in as alice, the link offers to join as alice.
    const offer = await owner.get(path)
    expect(titleOf(offer.body)).toBe('Join bob')
    expect(offer.body).toContain('You are signed in as <strong>alice</strong>.')
    const joined = await owner.post(path, { as: 'alice' })
    expect(joined.location).toBe('/account')
    expect((await owner.get('/account')).body).toContain(h.bob.defaultToken.id)

    const b = new DashboardClient(h.app)
    const signedIn = await b.signIn('alice', password)
    expect(signedIn.location).toBe('/account/accounts?next=%2Faccount')
    const choose = await b.get(signedIn.location as string)
    expect(titleOf(choose.body)).toBe('Choose an account')
    expect([...choose.body.matchAll(/name="account" value="([^"]+)"/g)].map((m) => m[1])).toEqual([
      'alice',
      'bob',
    ])
    const toBob = await b.post('/account/accounts', { account: 'bob', next: '/account' })
    expect(toBob.location).toBe('/account')
    const tokens = await b.get('/account')
    expect(tokens.body).toContain(h.bob.defaultToken.id)
    expect(tokens.body).not.toContain('Create a token')
    const back = await b.post('/account/accounts', { account: 'alice', next: '/account/scopes' })
    expect(back.location).toBe('/account/scopes')
    expect((await b.get('/account')).body).toContain(h.alice.defaultToken.id)
    // Not a member: refused, the session stays where it was.
    const refused = await b.post('/account/accounts', { account: 'carol', next: '/account' })
    expect(refused.status).toBe(403)
    expect((await b.get('/account')).body).toContain(h.alice.defaultToken.id)
  })

  it('uses an invitation link once; a revoked or expired one answers 410', async () => {
    const made = await owner.post('/account/members/invite', {
      email: 'dana@example.com',
      role: 'developer',
    })
    const path = linkPath(made.body, 'invitations')
    const taken = new DashboardClient(h.app)
    const bad = await taken.post(path, { login: 'alice', password, confirm: password })
    expect(bad.status).toBe(422)
    expect(alertOf(bad.body)).toBe('This username is taken')
    expect((await taken.post(path, { login: 'dana', password, confirm: password })).status).toBe(
      303,
    )
    const second = await new DashboardClient(h.app).post(path, {
      login: 'dan2',
      password,
      confirm: password,
    })
    expect(second.status).toBe(410)
    expect((await new DashboardClient(h.app).get(path)).status).toBe(410)

    const other = linkPath(
      (await owner.post('/account/members/invite', { email: 'e@example.com', role: 'viewer' }))
        .body,
      'invitations',
    )
    const open = await admin(h.app, 'GET', '/accounts/alice/members')
    expect(open.body).toHaveLength(2)
    const page = await owner.get('/account/members')
    const id = /invitations\/([0-9a-f]{16})\/revoke/.exec(page.body)?.[1] as string
    expect((await owner.post(`/account/members/invitations/${id}/revoke`, {})).location).toBe(
      '/account/members?done=revoked',
    )
    expect((await new DashboardClient(h.app).get(other)).status).toBe(410)

    const late = linkPath(
      (await owner.post('/account/members/invite', { email: 'f@example.com', role: 'viewer' }))
        .body,
      'invitations',
    )
    h.clock.now += 7 * 24 * 60 * minute
    expect((await new DashboardClient(h.app).get(late)).status).toBe(410)
    expect((await new DashboardClient(h.app).get('/account/invitations/x')).status).toBe(404)
  })

  it('invites, lists, changes and removes members through the admin API', async () => {
    const bad = await admin(h.app, 'POST', '/accounts/alice/members', {
      email: 'nope',
      role: 'developer',
    })
    expect(bad).toMatchObject({
      status: 422,
      body: { message: 'resources are invalid', details: 'email must be an email address' },
    })
    const badRole = await admin(h.app, 'POST', '/accounts/alice/members', {
      email: 'a@b.co',
      role: 'admin',
    })
    expect(badRole.body.details).toBe('role must be owner, developer or viewer')
    const res = await admin(h.app, 'POST', '/accounts/alice/members', {
      email: 'Dana@Example.com',
      role: 'developer',
    })
    expect(res.status).toBe(201)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toEqual({
      email: 'dana@example.com',
      role: 'developer',
      invitationUrl: expect.stringMatching(
        /^https:\/\/[^/]+\/account\/invitations\/[A-Za-z0-9_-]{43}$/,
      ),
      expires: new Date(T0 + 7 * 24 * 60 * minute).toISOString(),
    })
    // Without SMTP_URL nothing is mailed, and the answer says nothing about mail.
    expect(Object.keys(res.body)).toEqual(['email', 'role', 'invitationUrl', 'expires'])
    const b = new DashboardClient(h.app)
    const path = new URL(res.body.invitationUrl).pathname
    expect((await b.post(path, { login: 'dana', password, confirm: password })).status).toBe(303)
    const changed = await admin(h.app, 'PATCH', '/accounts/alice/members/dana', { role: 'viewer' })
    expect(changed.body).toEqual({
      login: 'dana',
      email: 'dana@example.com',
      role: 'viewer',
      created: new Date(T0).toISOString(),
      sso: false,
    })
    expect((await b.get('/account')).location).toBe('/account/sign-in')
    expect(
      (await admin(h.app, 'PATCH', '/accounts/alice/members/zed', { role: 'viewer' })).body,
    ).toEqual({
      message: 'Not found',
      details: 'no such member: zed',
    })
    expect((await admin(h.app, 'DELETE', '/accounts/alice/members/dana')).status).toBe(204)
    expect((await admin(h.app, 'DELETE', '/accounts/alice/members/dana')).status).toBe(404)
    const events = (
      await admin(
        h.app,
        'GET',
        '/accounts/alice/audit?action=member.invited,member.added,member.role_changed,member.removed',
      )
    ).body
    expect(
      events.map((e: { action: string; actor: unknown; target: unknown; details: unknown }) => [
        e.action,
        e.actor,
        e.target,
        e.details,
      ]),
    ).toEqual([
      [
        'member.removed',
        { type: 'admin', id: 'k1' },
        { type: 'member', id: 'dana' },
        { role: 'viewer' },
      ],
      [
        'member.role_changed',
        { type: 'admin', id: 'k1' },
        { type: 'member', id: 'dana' },
        { role: 'viewer', previous: 'developer' },
      ],
      [
        'member.added',
        { type: 'anonymous', login: 'dana' },
        { type: 'member', id: 'dana' },
        { role: 'developer', via: 'invitation' },
      ],
      [
        'member.invited',
        { type: 'admin', id: 'k1' },
        { type: 'invitation', id: expect.stringMatching(/^[0-9a-f]{16}$/) },
        { email: 'dana@example.com', role: 'developer' },
      ],
    ])
  })

  it('names the person and how they signed in, in the audit log and the Activity page', async () => {
    const dev = (await join(owner, 'dana@example.com', 'developer', 'dana')).browser
    await dev.post('/account/tokens/new', { note: 'from dana', scopes: ['styles:read'] })
    const events = (
      await admin(h.app, 'GET', '/accounts/alice/audit?action=token.created,signin.succeeded')
    ).body
    expect(events.map((e: { action: string; actor: unknown }) => [e.action, e.actor])).toEqual([
      [
        'token.created',
        {
          type: 'session',
          id: expect.stringMatching(/^[0-9a-f]{16}$/),
          login: 'dana',
          method: 'password',
        },
      ],
    ])
    await new DashboardClient(h.app).signIn('dana', password)
    const signIns = (await admin(h.app, 'GET', '/accounts/alice/audit?action=signin.succeeded'))
      .body
    expect(signIns.map((e: { actor: unknown }) => e.actor)).toEqual([
      { type: 'anonymous', login: 'dana', method: 'password' },
    ])
    const activity = await owner.get('/account/activity')
    expect(activity.body).toContain('<span class="person">dana</span> (password)')
  })
})

describe('one-time portal links', () => {
  let h: Harness
  const create = (body: Record<string, unknown>, username = 'alice') =>
    admin(h.app, 'POST', `/accounts/${username}/portal-links`, body)

  beforeEach(async () => {
    h = await harness({
      ...adminEnv,
      PORTAL_RETURN_ORIGINS: 'https://platform.example, https://app.platform.example:8443',
    })
  })
  afterEach(() => h.close())

  it('signs the person in once, within 5 minutes; a GET alone does not use it', async () => {
    const res = await create({
      email: 'Pat@Platform.example',
      name: 'Pat Doe',
      role: 'developer',
      returnUrl: 'https://platform.example/settings/api',
    })
    expect(res.status).toBe(201)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toEqual({
      url: expect.stringMatching(/^https:\/\/[^/]+\/account\/portal\/[A-Za-z0-9_-]{43}$/),
      expires: new Date(T0 + 5 * minute).toISOString(),
    })
    const path = new URL(res.body.url).pathname
    const b = new DashboardClient(h.app)
    for (let i = 0; i < 2; i++) {
      const page = await b.get(path)
      expect(page.status).toBe(200)
      expect(page.headers['referrer-policy']).toBe('no-referrer')
      expect(titleOf(page.body)).toBe('Manage your access tokens')
      expect(page.body).toContain(`<form method="post" action="${path}"`)
      expect(page.body).toContain(
        '<a href="https://platform.example/settings/api">Back to platform.example</a>',
      )
    }
    const used = await b.post(path, {})
    expect(used.status).toBe(303)
    expect(used.location).toBe('/account')
    expect(used.headers['referrer-policy']).toBe('no-referrer')
    const tokens = await b.get('/account')
    expect(tokens.status).toBe(200)
    expect(tokens.body).toContain('Create a token')
    expect(tokens.body).toContain('Back to platform.example')
    expect(tokens.body).toContain('alice <span class="login">(pat)</span>')

    const gone = await new DashboardClient(h.app).post(path, {})
    expect(gone.status).toBe(410)
    expect(titleOf(gone.body)).toBe('Link no longer valid')
    expect((await new DashboardClient(h.app).get(path)).body).toBe(gone.body)
    const unknown = await new DashboardClient(h.app).get(`/account/portal/${'A'.repeat(43)}`)
    expect([unknown.status, unknown.body]).toEqual([410, gone.body])
    expect((await new DashboardClient(h.app).get('/account/portal/short')).body).toBe(gone.body)

    const later = new URL(
      (await create({ email: 'pat@platform.example', role: 'viewer' })).body.url,
    ).pathname
    h.clock.now += 5 * minute
    const expired = await new DashboardClient(h.app).post(later, {})
    expect([expired.status, expired.body]).toEqual([410, gone.body])

    expect((await admin(h.app, 'GET', '/accounts/alice/members')).body).toEqual([
      { login: 'alice', role: 'owner', created: new Date(T0).toISOString(), sso: false },
      {
        login: 'pat',
        email: 'pat@platform.example',
        name: 'Pat Doe',
        role: 'developer',
        created: new Date(T0).toISOString(),
        sso: false,
      },
    ])
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit')).body
    expect(
      events
        .filter(
          (e: { action: string }) =>
            !e.action.startsWith('account.') && e.action !== 'token.created',
        )
        .map((e: { action: string; actor: unknown }) => [e.action, e.actor]),
    ).toEqual([
      ['portal_link.created', { type: 'admin', id: 'k1' }],
      ['signin.succeeded', { type: 'anonymous', login: 'pat', method: 'link' }],
      ['member.added', { type: 'anonymous', login: 'pat', method: 'link' }],
      ['portal_link.created', { type: 'admin', id: 'k1' }],
    ])
  })

  it("takes the Continue of its own page (Origin null under no-referrer), never another site's", async () => {
    const path = async () =>
      new URL((await create({ email: 'pat@platform.example', role: 'viewer' })).body.url).pathname
    const forged = [
      { origin: 'null', 'sec-fetch-site': 'cross-site' },
      { origin: 'null' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' },
    ]
    const link = await path()
    for (const headers of forged) {
      const res = await new DashboardClient(h.app).post(link, {}, headers)
      expect(res.status, JSON.stringify(headers)).toBe(403)
    }
    // Refused before it was used: the browser's own Continue still works.
    const own = await new DashboardClient(h.app).post(
      link,
      {},
      {
        origin: 'null',
        'sec-fetch-site': 'same-origin',
      },
    )
    expect([own.status, own.location]).toEqual([303, '/account'])
  })

  it('matches the member by email within the account, and gives them the role of the link', async () => {
    const first = new URL(
      (await create({ email: 'pat@platform.example', role: 'developer' })).body.url,
    ).pathname
    await new DashboardClient(h.app).post(first, {})
    const second = new URL(
      (await create({ email: 'PAT@platform.example', role: 'viewer' })).body.url,
    ).pathname
    const b = new DashboardClient(h.app)
    expect((await b.post(second, {})).location).toBe('/account')
    expect((await b.get('/account')).body).not.toContain('Create a token')
    const members = (await admin(h.app, 'GET', '/accounts/alice/members')).body
    expect(members.map((m: { login: string; role: string }) => [m.login, m.role])).toEqual([
      ['alice', 'owner'],
      ['pat', 'viewer'],
    ])
    // Another account's link makes a person of its own: the email was vouched for in alice only.
    const bob = new URL(
      (await create({ email: 'pat@platform.example', role: 'owner' }, 'bob')).body.url,
    ).pathname
    const inBob = new DashboardClient(h.app)
    expect((await inBob.post(bob, {})).location).toBe('/account')
    expect((await inBob.get('/account')).body).toContain(h.bob.defaultToken.id)
    expect(
      (await admin(h.app, 'GET', '/accounts/bob/members')).body.map(
        (m: { login: string }) => m.login,
      ),
    ).toEqual(['bob', 'pat-2'])
  })

  it('refuses a returnUrl off the allow-list, a bad role or email: 422, nothing made', async () => {
    const refusals = [
      [
        { email: 'p@platform.example', role: 'developer', returnUrl: 'https://evil.example/' },
        'returnUrl must be an https URL on an origin listed in PORTAL_RETURN_ORIGINS',
      ],
      [
        { email: 'p@platform.example', role: 'developer', returnUrl: 'http://platform.example/' },
        'returnUrl must be an https URL on an origin listed in PORTAL_RETURN_ORIGINS',
      ],
      [
        {
          email: 'p@platform.example',
          role: 'developer',
          returnUrl: 'https://platform.example.evil.example/',
        },
        'returnUrl must be an https URL on an origin listed in PORTAL_RETURN_ORIGINS',
      ],
      [
        { email: 'p@platform.example', role: 'developer', returnUrl: 'javascript:alert(1)' },
        'returnUrl must be an https URL on an origin listed in PORTAL_RETURN_ORIGINS',
      ],
      [
        {
          email: 'p@platform.example',
          role: 'developer',
          returnUrl: 'https://user@platform.example/',
        },
        'returnUrl must be an https URL on an origin listed in PORTAL_RETURN_ORIGINS',
      ],
      [{ email: 'p@platform.example', role: 'admin' }, 'role must be owner, developer or viewer'],
      [{ email: 'not an email', role: 'viewer' }, 'email must be an email address'],
    ] as const
    for (const [body, details] of refusals) {
      const res = await create(body)
      expect([res.status, res.body], JSON.stringify(body)).toEqual([
        422,
        { message: 'resources are invalid', details },
      ])
    }
    expect((await create({ email: 'p@platform.example' })).status).toBe(422)
    expect((await create({ email: 'p@platform.example', role: 'viewer' }, 'nobody')).status).toBe(
      404,
    )
    const ok = await create({
      email: 'p@platform.example',
      role: 'viewer',
      returnUrl: 'https://app.platform.example:8443/x',
    })
    expect(ok.status).toBe(201)
    const audit = (await admin(h.app, 'GET', '/accounts/alice/audit?action=portal_link.created'))
      .body
    expect(audit).toHaveLength(1)
  })
})
