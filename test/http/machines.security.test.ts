import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

// The red team's steps against tokens for machines (issue 46): who may make children of whose
// token, what a child token may do with its tokens:write, and who may set trust policies. Each
// step is one an attacker holding a child token (an agent gone rogue) or another account's
// token would try; each must fail and change nothing.

const iso = (ms: number) => new Date(ms).toISOString()

describe('child tokens against an attacker', () => {
  let h: Harness
  let owner: string
  let parentId: string
  /** An agent's token: a child sk with tokens:write, restricted to a URL, ending in a day. */
  let agent: { id: string; token: string }

  beforeEach(async () => {
    h = await harness(adminEnv)
    owner = (await h.token('alice', [...all, 'styles:read', 'fonts:read'])).token
    const parent = await call(h.app, 'POST', '/tokens/v2/alice', owner, {
      note: 'agents',
      scopes: ['tokens:read', 'tokens:write', 'styles:read'],
      allowedUrls: ['https://agents.example.com'],
      expiresAt: iso(T0 + 86_400_000),
    })
    parentId = parent.body.id
    const made = await call(h.app, 'POST', `/tokens/v2/alice/${parentId}/children`, owner, {
      note: 'agent',
      scopes: ['tokens:read', 'tokens:write', 'styles:read'],
    })
    expect(made.status).toBe(200)
    agent = made.body
  })
  afterEach(() => h.close())

  const ids = async () =>
    (await call(h.app, 'GET', '/tokens/v2/alice', owner)).body
      .map((t: { id: string }) => t.id)
      .sort()

  it("another account's token makes no child of alice's token, by either username", async () => {
    const bobs = (await h.token('bob', [...all, 'styles:read'])).token
    const before = await ids()
    const viaBob = await call(h.app, 'POST', `/tokens/v2/bob/${parentId}/children`, bobs, {})
    expect(viaBob.status).toBe(404)
    const viaAlice = await call(h.app, 'POST', `/tokens/v2/alice/${parentId}/children`, bobs, {})
    expect(viaAlice.status).toBe(404)
    expect(await ids()).toEqual(before)
  })

  it("a child's plain create makes its own child, held to its bounds", async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', agent.token, {
      note: 'escape',
      scopes: ['styles:read'],
    })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      parent: agent.id,
      allowedUrls: ['https://agents.example.com'],
      expiresAt: iso(T0 + 86_400_000),
    })
    const wider = await call(h.app, 'POST', '/tokens/v2/alice', agent.token, {
      scopes: ['styles:read'],
      allowedUrls: ['https://example.com'],
    })
    expect(wider.status).toBe(422)
  })

  it('a child makes no temporary token: it would outlive the child', async () => {
    const res = await call(h.app, 'POST', '/tokens/v2/alice', agent.token, {
      expires: iso(T0 + 600_000),
      scopes: ['styles:read'],
    })
    expect(res.status).toBe(404)
    expect(res.body.details).toBe(
      'a child token may not create temporary tokens: they would outlive it; make a child token',
    )
  })

  it('a child changes, rolls and deletes neither its parent nor a sibling nor any other token', async () => {
    const sibling = await call(h.app, 'POST', `/tokens/v2/alice/${parentId}/children`, owner, {
      scopes: ['styles:read'],
    })
    const others = [parentId, sibling.body.id, h.alice.defaultToken.id]
    for (const id of others) {
      const patch = await call(h.app, 'PATCH', `/tokens/v2/alice/${id}`, agent.token, { note: 'x' })
      expect(patch.status).toBe(404)
      expect(patch.body.details).toBe(
        'a child token may change only itself and the tokens made under it',
      )
      expect((await call(h.app, 'POST', `/tokens/v2/alice/${id}/roll`, agent.token)).status).toBe(
        404,
      )
      expect((await call(h.app, 'DELETE', `/tokens/v2/alice/${id}`, agent.token)).status).toBe(404)
      const child = await call(h.app, 'POST', `/tokens/v2/alice/${id}/children`, agent.token, {})
      expect(child.status).toBe(404)
    }
    expect(await ids()).toContain(parentId)
    expect(await ids()).toContain(sibling.body.id)
    // Its own family it may change.
    const own = await call(h.app, 'POST', `/tokens/v2/alice/${agent.id}/children`, agent.token, {
      scopes: ['styles:read'],
    })
    expect(own.status).toBe(200)
    expect(
      (await call(h.app, 'PATCH', `/tokens/v2/alice/${own.body.id}`, agent.token, { note: 'y' }))
        .status,
    ).toBe(200)
    expect(
      (await call(h.app, 'DELETE', `/tokens/v2/alice/${own.body.id}`, agent.token)).status,
    ).toBe(204)
  })

  it("a child lists its own family alone, never the account's other tokens or their strings", async () => {
    const own = await call(h.app, 'POST', `/tokens/v2/alice/${agent.id}/children`, agent.token, {
      scopes: ['styles:read'],
    })
    const listed = await call(h.app, 'GET', '/tokens/v2/alice', agent.token)
    expect(listed.status).toBe(200)
    expect(listed.body.map((t: { id: string }) => t.id)).toEqual([own.body.id])
    const up = await call(h.app, 'GET', `/tokens/v2/alice?parent=${parentId}`, agent.token)
    expect(up.status).toBe(404)
    expect(JSON.stringify(listed.body)).not.toContain(h.alice.defaultToken.token as string)
  })

  it('a child only narrows what it changes: itself and its descendants never widen', async () => {
    const narrow = await call(h.app, 'POST', `/tokens/v2/alice/${parentId}/children`, owner, {
      note: 'narrow agent',
      scopes: ['tokens:write', 'styles:read'],
      allowedUrls: ['https://agents.example.com/a'],
      allowedIps: ['127.0.0.1'],
      expiresAt: iso(T0 + 3_600_000),
      ratelimits: [{ name: 'requests', limit: 50, duration: 60_000 }],
    })
    const self = narrow.body
    for (const patch of [
      { allowedUrls: ['https://agents.example.com'] },
      { allowedIps: null },
      { expiresAt: iso(T0 + 86_400_000) },
      { ratelimits: null },
    ]) {
      const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${self.id}`, self.token, patch)
      expect(res.status).toBe(422)
      expect(res.body.details).toMatch(/^a child token may only narrow: /)
    }
    const listed = await call(h.app, 'GET', `/tokens/v2/alice?parent=${parentId}`, owner)
    expect(listed.body.find((t: { id: string }) => t.id === self.id)).toMatchObject({
      allowedUrls: ['https://agents.example.com/a'],
      allowedIps: ['127.0.0.1'],
      expiresAt: iso(T0 + 3_600_000),
    })
    const narrower = await call(h.app, 'PATCH', `/tokens/v2/alice/${self.id}`, self.token, {
      note: 'narrower',
      allowedIps: ['127.0.0.1'],
    })
    expect(narrower.status).toBe(200)
    // The owner may widen it again, within its parent.
    const owners = await call(h.app, 'PATCH', `/tokens/v2/alice/${self.id}`, owner, {
      allowedIps: null,
    })
    expect(owners.status).toBe(200)
  })

  it('a rolled child stays a child, with its credits, and without a grace for its old string', async () => {
    await admin(h.app, 'PUT', `/accounts/alice/tokens/${agent.id}/credits`, { remaining: 30 })
    const graced = await call(h.app, 'POST', `/tokens/v2/alice/${agent.id}/roll`, owner, {
      expires: iso(T0 + 60_000),
    })
    expect(graced.status).toBe(422)
    const rolled = await call(h.app, 'POST', `/tokens/v2/alice/${agent.id}/roll`, owner)
    expect(rolled.status).toBe(200)
    expect(rolled.body.parent).toBe(parentId)
    const credits = await admin(h.app, 'GET', `/accounts/alice/tokens/${rolled.body.id}/credits`)
    expect(credits.body.remaining).toBe(30)
    expect((await call(h.app, 'GET', '/tokens/v2', agent.token)).body.code).toBe('TokenRevoked')
    expect((await call(h.app, 'DELETE', `/tokens/v2/alice/${parentId}`, owner)).status).toBe(204)
    expect((await call(h.app, 'GET', '/tokens/v2', rolled.body.token)).body.code).toBe(
      'TokenRevoked',
    )
  })
})

describe('trust policies against an attacker', () => {
  let h: Harness
  beforeEach(async () => {
    h = await harness(adminEnv)
  })
  afterEach(() => h.close())

  const policy = {
    issuer: 'https://token.actions.githubusercontent.com',
    audience: 'https://tessera.example',
    subject: 'repo:octo/app:*',
    scopes: ['styles:read'],
    maxTtl: 600,
  }

  it('are set by an operator key alone: no key, a wrong key and an account token are refused', async () => {
    const none = await admin(h.app, 'PUT', '/accounts/alice/trust-policies', [policy], null)
    expect(none.status).toBe(401)
    const wrong = await admin(h.app, 'PUT', '/accounts/alice/trust-policies', [policy], 'nope')
    expect(wrong.status).toBe(401)
    const sk = (await h.token('alice', [...all])).token
    const res = await h.app.inject({
      method: 'PUT',
      url: '/admin/v1/accounts/alice/trust-policies',
      headers: { authorization: `Bearer ${sk}`, 'content-type': 'application/json' },
      payload: JSON.stringify([policy]),
    })
    expect(res.statusCode).toBe(401)
    expect((await admin(h.app, 'GET', '/accounts/alice/trust-policies')).body).toEqual([])
  })

  it.each([
    [
      [{ ...policy, issuer: 'http://issuer.example' }],
      'policies[0].issuer must be an https URL without a trailing slash, query or fragment',
    ],
    [
      [{ ...policy, scopes: ['tokens:write', 'styles:read', 'analytics:read'] }],
      'policies[0].scopes: "analytics:read" is not available to this account',
    ],
    [
      [{ ...policy, maxTtl: 3601 }],
      'policies[0].maxTtl must be a whole number of seconds from 60 to 3600',
    ],
    [
      [{ ...policy, claims: { aud: '*' } }],
      'policies[0].claims.aud is checked by the policy itself: use issuer, audience or subject',
    ],
    [[{ ...policy, admin: true }], 'policies[0] has an unknown field admin'],
  ])('refuses %j and changes nothing', async (body, details) => {
    await admin(h.app, 'PUT', '/accounts/alice/trust-policies', [policy])
    const res = await admin(h.app, 'PUT', '/accounts/alice/trust-policies', body)
    expect(res.status).toBe(422)
    expect(res.body).toEqual({ message: 'resources are invalid', details })
    expect((await admin(h.app, 'GET', '/accounts/alice/trust-policies')).body).toEqual([policy])
  })

  it('keeps both of two policies added at once (read and written under the account row lock)', async () => {
    const holder = { type: 'cli' as const }
    const add = (subject: string) =>
      h.ctx.exchange.changePolicies(
        h.alice,
        (current) => [...current, { ...policy, subject }],
        holder,
      )
    await Promise.all([add('repo:octo/a:*'), add('repo:octo/b:*'), add('repo:octo/c:*')])
    const subjects = (await admin(h.app, 'GET', '/accounts/alice/trust-policies')).body.map(
      (p: { subject: string }) => p.subject,
    )
    expect(subjects.sort()).toEqual(['repo:octo/a:*', 'repo:octo/b:*', 'repo:octo/c:*'])
  })

  it("one account's policies are not another's", async () => {
    await admin(h.app, 'PUT', '/accounts/alice/trust-policies', [policy])
    expect((await admin(h.app, 'GET', '/accounts/bob/trust-policies')).body).toEqual([])
    expect((await admin(h.app, 'GET', '/accounts/nobody/trust-policies')).status).toBe(404)
  })
})
