import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import type { TrustPolicy } from '../../src/exchange/policies.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { alertOf, DashboardClient, signedInHolder, titleOf } from './dashboard-client.js'

/** Machines in the dashboard (docs/machines.md): a token's family, and the trust policies page. */
const password = 'correct horse battery staple'
const inDays = (n: number) => new Date(T0 + n * 86_400_000).toISOString()

const entities: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"' }
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(amp|lt|gt|quot);/g, (e) => entities[e] ?? e)
    .replace(/\s+/g, ' ')
    .trim()

/** The HTML of the section labelled by the heading `id` (sections within it not counted). */
const section = (body: string, id: string) =>
  new RegExp(`<section aria-labelledby="${id}"[^>]*>([\\s\\S]*?)</section>`).exec(body)?.[1] ?? ''

/** The sentences said at the fields of a refused form, by the field's id. */
const fieldErrors = (body: string) =>
  [...body.matchAll(/<p class="field-error" id="([^"]+)-error">([^<]*)<\/p>/g)].map(
    (m) => `${m[1]}: ${text(m[2] ?? '')}`,
  )

let h: Harness
let owner: DashboardClient
beforeEach(async () => {
  h = await harness({ ...adminEnv, PUBLIC_URL: 'https://tessera.test' })
  owner = await signedInHolder(h.app, h.ctx, 'alice', password)
})
afterEach(() => h.close())

/** What the section says of children, below them. */
const about = (id: string) =>
  `A child token is never wider than its parent and ends with it. Child tokens are made through the API ( POST /tokens/v2/alice/${id}/children ).`

describe("a token's parent and children on its page", () => {
  it('lists the children of a parent, names the parent of a child, and says when there are none', async () => {
    const holder = h.ctx.accounts.holder(h.alice)
    const parent = await h.ctx.tokens.create(
      h.alice,
      holder,
      { note: 'agent root', scopes: ['styles:read', 'tokens:read'] },
      cliActor,
    )
    const child = (fields: { note?: string; scopes: string[]; expiresAt?: string }) =>
      h.ctx.tokens.createChild(h.alice, holder, parent.id, fields, cliActor)
    const agent = await child({ note: 'agent <one>', scopes: ['styles:read'] })
    h.clock.now = T0 + 1000
    const nameless = await child({ scopes: ['tokens:read'], expiresAt: inDays(30) })

    const page = await owner.get(`/account/tokens/${parent.id}`)
    expect(page.status).toBe(200)
    const family = section(page.body, 'family-heading')
    expect(text(family)).toBe(
      `Parent and children Children agent <one> pk ${nameless.id} sk · Expires 22 Dec 2026 ${about(parent.id)}`,
    )
    expect(family).toContain(`<a href="/account/tokens/${agent.id}">agent &lt;one&gt;</a>`)
    expect(family).toContain(`<a href="/account/tokens/${nameless.id}">${nameless.id}</a>`)

    const own = await owner.get(`/account/tokens/${agent.id}`)
    const agentFamily = section(own.body, 'family-heading')
    expect(text(agentFamily)).toBe(
      `Parent and children Made under agent root Children No child tokens. ${about(agent.id)}`,
    )
    expect(agentFamily).toContain(
      `<dt>Made under</dt><dd><a href="/account/tokens/${parent.id}">agent root</a></dd>`,
    )

    const lone = await owner.get(`/account/tokens/${h.alice.defaultToken.id}`)
    expect(text(section(lone.body, 'family-heading'))).toBe(
      `Parent and children Children No child tokens. ${about(h.alice.defaultToken.id)}`,
    )
  })
})

/** A policy as the form sends it (scopes as checkboxes, claims one a line). */
const added = {
  issuer: 'https://token.actions.githubusercontent.com',
  audience: 'https://tessera.test',
  subject: 'repo:acme/site:ref:refs/heads/*',
  claims: 'repository_owner=acme\r\n\r\nworkflow = deploy',
  scopes: ['styles:read', 'tokens:read'],
  maxTtl: '600',
}
const stored: TrustPolicy = {
  issuer: 'https://token.actions.githubusercontent.com',
  audience: 'https://tessera.test',
  subject: 'repo:acme/site:ref:refs/heads/*',
  scopes: ['styles:read', 'tokens:read'],
  maxTtl: 600,
  claims: { repository_owner: 'acme', workflow: 'deploy' },
}
/** `stored` as the page lists it, first. */
const storedText =
  'Policy 1 Issuer https://token.actions.githubusercontent.com Audience https://tessera.test Subject repo:acme/site:ref:refs/heads/* Claims repository_owner=acme workflow=deploy Scopes styles:read tokens:read Max TTL 600 seconds (10 minutes)'
const policiesOf = async (username = 'alice') =>
  (await admin(h.app, 'GET', `/accounts/${username}/trust-policies`)).body
const audit = async () =>
  (await admin(h.app, 'GET', '/accounts/alice/audit?action=trust_policies.changed')).body
const changes = async () => (await audit()).length
const done = (what: string) => `/account/trust-policies?done=${what}`
const removing = { policy: JSON.stringify(stored) }

/** The policies as the Remove buttons send them. */
const shownPolicies = (body: string) =>
  [...body.matchAll(/name="policy" value="([^"]+)"/g)].map((m) => text(m[1] ?? ''))

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

describe('the trust policies page', () => {
  it('is linked from Settings, shows the exchange URL, and starts empty', async () => {
    const settings = await owner.get('/account/settings')
    const machines = section(settings.body, 'machines-heading')
    expect(machines).toContain('<a href="/account/trust-policies">Trust policies</a>')
    expect(text(machines)).toBe(
      'Machines CI jobs and cloud workloads can exchange their signed identity for a temporary token, with no secret stored: Trust policies say which may, with what scopes. None yet.',
    )
    const page = await owner.get('/account/trust-policies')
    expect([page.status, titleOf(page.body)]).toEqual([200, 'Trust policies'])
    expect(text(section(page.body, 'exchange-heading'))).toBe(
      'Exchange URL https://tessera.test/tokens/v2/alice/exchange Copy A workload posts its identity token here (an OAuth token exchange, RFC 8693) and receives a temporary token of at most an hour.',
    )
    expect(text(section(page.body, 'policies-heading'))).toBe(
      'Policies No trust policies: no workload can exchange its identity for a token of this account.',
    )
    expect(page.body).toContain(
      'name="maxTtl" type="number" inputmode="numeric" min="60" max="3600" step="1" value="900"',
    )
  })

  it('adds a policy for an owner: listed on the page, read by the API, audited as the session', async () => {
    const sent = await owner.post('/account/trust-policies', added)
    expect([sent.status, sent.location]).toEqual([303, done('added')])
    expect(await policiesOf()).toEqual([stored])
    expect(await policiesOf('bob')).toEqual([])
    const page = await owner.get('/account/trust-policies?done=added')
    expect(page.body).toContain('<p role="status" class="notice">Trust policy added</p>')
    expect(text(section(page.body, 'policy-1-heading'))).toBe(`${storedText} Remove`)
    expect(await audit()).toMatchObject([
      {
        actor: { type: 'session', login: 'alice', method: 'password' },
        target: { type: 'account', id: 'alice' },
        details: { issuers: [stored.issuer], count: 1 },
      },
    ])
    const settings = await owner.get('/account/settings')
    expect(text(section(settings.body, 'machines-heading'))).toMatch(/ 1 policy in effect\.$/)
  })

  const ttl = 'tp-max-ttl: Max TTL (seconds) must be a whole number of seconds from 60 to 3600.'
  it.each<[string, Partial<typeof added>, string]>([
    [
      'an issuer that is not https',
      { issuer: 'http://issuer.example' },
      'tp-issuer: Issuer must be an https URL without a trailing slash, query or fragment.',
    ],
    [
      'no audience',
      { audience: '' },
      'tp-audience: Audience must be a text of 1 to 256 characters.',
    ],
    [
      'a claim the policy checks itself',
      { claims: 'sub=repo:*' },
      'tp-claims: Claims: sub is checked by the policy itself: use issuer, audience or subject.',
    ],
    [
      'a line without =',
      { claims: 'a=b\nacme' },
      'tp-claims: Claims: write each line as name=glob (not acme).',
    ],
    ['a claim named twice', { claims: 'ref=a\nref=b' }, 'tp-claims: Claims: ref is named twice.'],
    ['no scope', { scopes: [] }, 'scopes: Choose at least one scope.'],
    [
      'a scope the account does not have',
      { scopes: ['analytics:read'] },
      'scopes: Scopes: "analytics:read" is not available to this account.',
    ],
    ['a max TTL past an hour', { maxTtl: '3601' }, ttl],
    ['a max TTL in words', { maxTtl: 'ten' }, ttl],
  ])(
    'refuses %s with 422 at the field, keeps what was typed, changes nothing',
    async (_, change, said) => {
      const typed = { ...added, ...change }
      const before = await changes()
      const page = await owner.post('/account/trust-policies', typed)
      expect(page.status).toBe(422)
      expect(alertOf(page.body)).toBe('The trust policy was not added.')
      expect(fieldErrors(page.body)).toEqual([said])
      expect(page.body).toContain(`name="issuer" type="url" value="${typed.issuer}"`)
      expect(page.body).toContain(`name="audience" type="text" value="${typed.audience}"`)
      expect(page.body).toContain(`>${typed.claims}</textarea>`)
      expect(page.body).toContain(`value="${typed.maxTtl}"`)
      for (const scope of typed.scopes.filter((s) => s !== 'analytics:read'))
        expect(page.body).toMatch(new RegExp(`value="${scope}" aria-describedby="[^"]+" checked`))
      expect(await policiesOf()).toEqual([])
      expect(await changes()).toBe(before)
    },
  )

  it('removes the policy shown, and refuses one changed meanwhile with 409', async () => {
    const second = { ...stored, subject: 'repo:acme/site:environment:prod', claims: undefined }
    delete second.claims
    await h.ctx.exchange.setPolicies(h.alice, [stored, second], cliActor)
    const shown = shownPolicies((await owner.get('/account/trust-policies')).body)
    expect(shown.map((p) => JSON.parse(p))).toEqual([stored, second])
    const removed = await owner.post('/account/trust-policies/remove', { policy: shown[0] ?? '' })
    expect([removed.status, removed.location]).toEqual([303, done('removed')])
    expect(await policiesOf()).toEqual([second])
    const after = await owner.get('/account/trust-policies?done=removed')
    expect(after.body).toContain('<p role="status" class="notice">Trust policy removed</p>')
    expect(text(section(after.body, 'policy-1-heading'))).toContain(
      'Subject repo:acme/site:environment:prod Claims none',
    )

    const again = await owner.post('/account/trust-policies/remove', { policy: shown[0] ?? '' })
    expect(again.status).toBe(409)
    expect(alertOf(again.body)).toBe('That trust policy was changed or removed already.')
    expect(await policiesOf()).toEqual([second])
  })

  it('names a policy with a scope the account lost, refuses adds until it is removed', async () => {
    const features = (list: string[]) =>
      admin(h.app, 'PATCH', '/accounts/alice', { features: list })
    expect((await features(['navigation'])).status).toBe(200)
    const navigating = (await h.ctx.accounts.find('alice')) ?? h.alice
    const lost = [{ ...stored, scopes: ['navigation:read'] }]
    await h.ctx.exchange.setPolicies(navigating, lost, cliActor)
    expect((await features([])).status).toBe(200)
    const page = await owner.get('/account/trust-policies')
    expect(text(section(page.body, 'policy-1-heading'))).toContain(
      'Scopes navigation:read (no longer available to this account) Max TTL',
    )
    const add = await owner.post('/account/trust-policies', added)
    expect([add.status, alertOf(add.body)]).toEqual([422, 'The trust policy was not added.'])
    expect(text(add.body)).toContain(
      'Scopes of policy 1: "navigation:read" is not available to this account.',
    )
    expect(shownPolicies(page.body)).toEqual([JSON.stringify(lost[0])])
    const removed = await owner.post('/account/trust-policies/remove', {
      policy: JSON.stringify(lost[0]),
    })
    expect([removed.status, removed.location]).toEqual([303, done('removed')])
    expect(await policiesOf()).toEqual([])
  })

  it.each(['developer', 'viewer'] as const)(
    'shows a %s the policies read-only and refuses their add and remove with 403',
    async (role) => {
      await h.ctx.exchange.setPolicies(h.alice, [stored], cliActor)
      const b = await member(role, 'mia')
      const page = await b.get('/account/trust-policies')
      expect(page.status).toBe(200)
      expect(text(section(page.body, 'policy-1-heading'))).toBe(storedText)
      expect(page.body).not.toContain('Add policy')
      expect(page.body).not.toContain('/account/trust-policies/remove')
      expect(text(page.body)).toContain('Owners of the account add and remove its trust policies.')
      const before = await changes()
      const add = await b.post('/account/trust-policies', added)
      expect([add.status, titleOf(add.body)]).toEqual([403, 'Request refused'])
      expect(text(add.body)).toContain(`Your role in alice is ${role}: this needs an owner.`)
      const remove = await b.post('/account/trust-policies/remove', removing)
      expect(remove.status).toBe(403)
      expect(await policiesOf()).toEqual([stored])
      expect(await changes()).toBe(before)
    },
  )

  it('refuses an add or a remove without the CSRF token, or from another origin, with 403', async () => {
    await h.ctx.exchange.setPolicies(h.alice, [stored], cliActor)
    const before = await changes()
    const refusals = [
      await owner.post('/account/trust-policies', { ...added, _csrf: '' }),
      await owner.post('/account/trust-policies', { ...added, _csrf: 'forged' }),
      await owner.post('/account/trust-policies/remove', { ...removing, _csrf: '' }),
      await owner.post('/account/trust-policies', added, { origin: 'https://evil.example' }),
    ]
    expect(refusals.map((r) => [r.status, titleOf(r.body)])).toEqual(
      refusals.map(() => [403, 'Request refused']),
    )
    expect(await policiesOf()).toEqual([stored])
    expect(await changes()).toBe(before)
  })
})
