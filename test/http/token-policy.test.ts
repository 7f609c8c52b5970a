import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * Token policies (docs/token-policy.md): set by an owner, or per plan in the catalog; creates,
 * updates and rolls that break them are refused with a sentence; tokens made before keep working.
 */
const day = 86_400_000
const hour = 3_600_000
const iso = (ms: number) => new Date(ms).toISOString()
const refused = (sentence: string) => ({
  message: 'resources are invalid',
  details: `the account's token policy ${sentence}`,
})

/** The default catalog with a policy on the pro plan. */
function catalogWithPlanPolicy(policy: string): string {
  const source = readFileSync(path.join(import.meta.dirname, '../../catalog/default.yaml'), 'utf8')
  const yaml = source.replace(
    '    # policy: { maxSkLifetimeDays: 90, pkAllowedUrls: true, idleDays: 365, rollGraceMaxHours: 24 }',
    `    policy: ${policy}`,
  )
  if (yaml === source) throw new Error('the catalog no longer has the policy example')
  const file = path.join(tmpdir(), `tessera-policy-${process.pid}-${Date.now()}.yaml`)
  writeFileSync(file, yaml)
  return file
}

let h: Harness
afterEach(() => h.close())

const setPolicy = (body: unknown, username = 'alice') =>
  admin(h.app, 'PUT', `/accounts/${username}/token-policy`, body)

describe('an owner sets a token policy', () => {
  it('is read back, audited as token_policy.changed, and refused when it is not one', async () => {
    h = await harness(adminEnv)
    const empty = { own: {}, plan: {}, effective: {} }
    expect((await admin(h.app, 'GET', '/accounts/alice/token-policy')).body).toEqual(empty)
    const policy = {
      maxSkLifetimeDays: 90,
      pkAllowedUrls: true,
      idleDays: 30,
      rollGraceMaxHours: 2,
    }
    const set = await setPolicy(policy)
    expect([set.status, set.body]).toEqual([200, { own: policy, plan: {}, effective: policy }])
    expect((await admin(h.app, 'GET', '/accounts/alice/token-policy')).body).toEqual(set.body)
    expect((await admin(h.app, 'GET', '/accounts/bob/token-policy')).body).toEqual(empty)
    const events = await admin(h.app, 'GET', '/accounts/alice/audit?action=token_policy.changed')
    expect(events.body).toMatchObject([
      {
        action: 'token_policy.changed',
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'account', id: 'alice' },
        details: { policy, before: {} },
      },
    ])
    const bad: [unknown, string][] = [
      [{ maxSkLifetimeDays: 0 }, 'maxSkLifetimeDays must be a whole number from 1 to 3650'],
      [{ idleDays: 7 }, 'idleDays must be a whole number from 8 to 3650'],
      [{ rollGraceMaxHours: 25 }, 'rollGraceMaxHours must be a whole number from 0 to 24'],
      [{ maxSkLifetimeDays: 1.5 }, 'maxSkLifetimeDays must be a whole number from 1 to 3650'],
      [{ pkAllowedUrls: 'yes' }, 'pkAllowedUrls must be true or false'],
      [{ maxAge: 3 }, 'maxAge is not a token policy'],
      [
        [1],
        'a token policy is an object of maxSkLifetimeDays, pkAllowedUrls, idleDays and rollGraceMaxHours',
      ],
    ]
    for (const [body, details] of bad) {
      const res = await setPolicy(body)
      expect([res.status, res.body]).toEqual([422, { message: 'resources are invalid', details }])
    }
    // Nothing changed: the policy is as set, and only one change was audited.
    expect((await admin(h.app, 'GET', '/accounts/alice/token-policy')).body.own).toEqual(policy)
    const after = await admin(h.app, 'GET', '/accounts/alice/audit?action=token_policy.changed')
    expect(after.body).toHaveLength(1)
    // null and absent keys are no rule: {} removes the policy.
    const cleared = await setPolicy({ maxSkLifetimeDays: null })
    expect(cleared.body).toEqual(empty)
    expect((await setPolicy({}, 'nobody')).status).toBe(404)
  })

  it('refuses creates that break it with the documented sentences', async () => {
    h = await harness(adminEnv)
    const made = await h.token('alice', [...all, 'styles:read'])
    const writer = made.token
    const writerId = made.id
    await setPolicy({ maxSkLifetimeDays: 30, pkAllowedUrls: true })
    const create = (body: Record<string, unknown>) =>
      call(h.app, 'POST', '/tokens/v2/alice', writer, body)
    const noEnd = await create({ scopes: ['tokens:read'] })
    expect([noEnd.status, noEnd.body]).toEqual([
      422,
      refused('requires a secret token to end within 30 days: give expiresAt'),
    ])
    const far = await create({ scopes: ['tokens:read'], expiresAt: iso(T0 + 31 * day) })
    expect([far.status, far.body]).toEqual([
      422,
      refused(`allows a secret token 30 days at most: expiresAt ${iso(T0 + 30 * day)} or sooner`),
    ])
    const ok = await create({ scopes: ['tokens:read'], expiresAt: iso(T0 + 30 * day) })
    expect([ok.status, ok.body.expiresAt]).toEqual([200, iso(T0 + 30 * day)])
    const open = await create({ scopes: ['styles:read'] })
    expect([open.status, open.body]).toEqual([
      422,
      refused('requires a public token to have allowed URLs'),
    ])
    const pk = await create({ scopes: ['styles:read'], allowedUrls: ['https://example.com'] })
    expect(pk.status).toBe(200)
    // Bob's account has no policy.
    const bobs = (await h.token('bob', all)).token
    expect(
      (await call(h.app, 'POST', '/tokens/v2/bob', bobs, { scopes: ['tokens:read'] })).status,
    ).toBe(200)
    // Refused creates left no token behind: the default, the writer and the two made.
    const listed = (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body
    expect(listed.map((t: { id: string }) => t.id).sort()).toEqual(
      [h.alice.defaultToken.id, writerId, ok.body.id, pk.body.id].sort(),
    )
  })
})

describe('tokens made before a policy', () => {
  it('keep working, and changes may keep but not loosen what they have', async () => {
    h = await harness(adminEnv)
    const writer = (await h.token('alice', [...all, 'styles:read'])).token
    const old = await call(h.app, 'POST', '/tokens/v2/alice', writer, { scopes: ['tokens:read'] })
    const oldPk = await call(h.app, 'POST', '/tokens/v2/alice', writer, { scopes: ['styles:read'] })
    const urls = await call(h.app, 'POST', '/tokens/v2/alice', writer, {
      scopes: ['styles:read'],
      allowedUrls: ['https://a.example'],
    })
    const ending = await call(h.app, 'POST', '/tokens/v2/alice', writer, {
      scopes: ['tokens:read'],
      expiresAt: iso(T0 + 10 * day),
    })
    await setPolicy({ maxSkLifetimeDays: 30, pkAllowedUrls: true })
    // The old strings still work: the policy applies to what is made or changed from now.
    for (const t of [old.body.token, oldPk.body.token, writer]) {
      expect((await call(h.app, 'GET', '/tokens/v2', t)).body.code).toBe('TokenValid')
    }
    const patch = (id: string, body: Record<string, unknown>) =>
      call(h.app, 'PATCH', `/tokens/v2/alice/${id}`, writer, body)
    // A change that leaves the end (none) and the URLs (none) as they were is allowed.
    expect((await patch(old.body.id, { note: 'renamed', expiresAt: null })).status).toBe(200)
    expect((await patch(oldPk.body.id, { note: 'renamed', allowedUrls: [] })).status).toBe(200)
    // Giving an end beyond the policy, removing one, or clearing URLs is refused.
    const beyond = await patch(old.body.id, { expiresAt: iso(T0 + 40 * day) })
    expect([beyond.status, beyond.body]).toEqual([
      422,
      refused(`allows a secret token 30 days at most: expiresAt ${iso(T0 + 30 * day)} or sooner`),
    ])
    const removed = await patch(ending.body.id, { expiresAt: null })
    expect([removed.status, removed.body]).toEqual([
      422,
      refused('requires a secret token to end within 30 days: expiresAt stays'),
    ])
    const cleared = await patch(urls.body.id, { allowedUrls: [] })
    expect([cleared.status, cleared.body]).toEqual([
      422,
      refused('requires a public token to have allowed URLs'),
    ])
    // Refused changes changed nothing.
    const get = async (id: string) =>
      (await call(h.app, 'GET', '/tokens/v2/alice', writer)).body.find(
        (t: { id: string }) => t.id === id,
      )
    expect((await get(ending.body.id)).expiresAt).toBe(iso(T0 + 10 * day))
    expect((await get(urls.body.id)).allowedUrls).toEqual(['https://a.example'])
    expect(await get(old.body.id)).not.toHaveProperty('expiresAt')
    const within = await patch(old.body.id, { expiresAt: iso(T0 + 20 * day) })
    expect([within.status, within.body.expiresAt]).toEqual([200, iso(T0 + 20 * day)])
  })
})

describe('rolls under a policy', () => {
  it('hold the grace to the policy and give a new sk an end within it', async () => {
    h = await harness(adminEnv)
    const writer = (await h.token('alice', [...all, 'styles:read'])).token
    const sk = await call(h.app, 'POST', '/tokens/v2/alice', writer, { scopes: ['tokens:read'] })
    const late = await call(h.app, 'POST', '/tokens/v2/alice', writer, {
      scopes: ['tokens:read'],
      expiresAt: iso(T0 + 300 * day),
    })
    const soon = await call(h.app, 'POST', '/tokens/v2/alice', writer, {
      scopes: ['tokens:read'],
      expiresAt: iso(T0 + 5 * day),
    })
    await setPolicy({ maxSkLifetimeDays: 90, rollGraceMaxHours: 2 })
    const roll = (id: string, body?: Record<string, unknown>) =>
      call(h.app, 'POST', `/tokens/v2/alice/${id}/roll`, writer, body)
    const long = await roll(sk.body.id, { expires: iso(T0 + 3 * hour) })
    expect([long.status, long.body]).toEqual([
      422,
      refused(
        `allows a rolled token 2 hours of grace at most: expires ${iso(T0 + 2 * hour)} or sooner`,
      ),
    ])
    const rolled = await roll(sk.body.id, { expires: iso(T0 + 2 * hour) })
    expect([rolled.status, rolled.body.expiresAt]).toEqual([200, iso(T0 + 90 * day)])
    expect((await roll(late.body.id)).body.expiresAt).toBe(iso(T0 + 90 * day))
    expect((await roll(soon.body.id)).body.expiresAt).toBe(iso(T0 + 5 * day))
  })
})

describe('temporary tokens of an sk with an end', () => {
  it('end no later than the sk that makes them', async () => {
    h = await harness(adminEnv)
    const account = await h.ctx.accounts.find('alice')
    if (account === undefined) throw new Error('no alice')
    const sk = (await h.ctx.tokens.create(
      account,
      h.ctx.accounts.holder(account),
      { scopes: [...all, 'styles:read'], expiresAt: iso(T0 + 30 * 60_000) },
      cliActor,
    )) as { token: string }
    const body = (minutes: number) => ({
      scopes: ['styles:read'],
      expires: iso(T0 + minutes * 60_000),
    })
    const past = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, body(45))
    expect([past.status, past.body]).toEqual([
      422,
      { message: 'expires may not be greater than the expiration of the authorizing token' },
    ])
    const within = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, body(30))
    expect(within.status).toBe(200)
  })
})

describe('a plan policy in the catalog', () => {
  it('holds for the plan’s accounts, and an owner may only tighten it', async () => {
    const file = catalogWithPlanPolicy('{ maxSkLifetimeDays: 90, idleDays: 365 }')
    try {
      h = await harness({ ...adminEnv, SCOPES_FILE: file })
    } finally {
      rmSync(file)
    }
    await h.ctx.accounts.create('carol', 'pro', [], cliActor)
    const plan = { maxSkLifetimeDays: 90, idleDays: 365 }
    const got = await admin(h.app, 'GET', '/accounts/carol/token-policy')
    expect(got.body).toEqual({ own: {}, plan, effective: plan })
    const looser = await setPolicy({ maxSkLifetimeDays: 120, idleDays: 400 }, 'carol')
    expect([looser.status, looser.body]).toEqual([
      422,
      {
        message: 'resources are invalid',
        details:
          'the plan sets maxSkLifetimeDays to 90 days: at most that; the plan sets idleDays to 365 days: at most that',
      },
    ])
    const tighter = await setPolicy({ maxSkLifetimeDays: 30, pkAllowedUrls: true }, 'carol')
    expect(tighter.body).toEqual({
      own: { maxSkLifetimeDays: 30, pkAllowedUrls: true },
      plan,
      effective: { maxSkLifetimeDays: 30, pkAllowedUrls: true, idleDays: 365 },
    })
    // Its holder's own tokens too: an sk made without an end is refused.
    const account = await h.ctx.accounts.get('carol')
    const holder = h.ctx.accounts.holder(account)
    await expect(h.ctx.tokens.create(account, holder, { scopes: all }, cliActor)).rejects.toThrow(
      'resources are invalid',
    )
    const made = await h.ctx.tokens.create(
      account,
      holder,
      { scopes: all, expiresAt: iso(T0 + 30 * day) },
      cliActor,
    )
    const carol = made.token as string
    const res = await call(h.app, 'POST', '/tokens/v2/carol', carol, {
      scopes: ['tokens:read'],
      expiresAt: iso(T0 + 31 * day),
    })
    expect(res.status).toBe(422)
    // Alice's plan (standard) sets nothing.
    expect((await admin(h.app, 'GET', '/accounts/alice/token-policy')).body.plan).toEqual({})
  })

  it('refuses a catalog whose policy is not one, at start-up', async () => {
    const file = catalogWithPlanPolicy('{ idleDays: 2 }')
    try {
      await expect(harness({ ...adminEnv, SCOPES_FILE: file })).rejects.toThrow(
        `${file}: plans.pro.policy: idleDays must be a whole number from 8 to 3650`,
      )
    } finally {
      rmSync(file)
    }
    h = await harness(adminEnv)
  })
})
