import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Actor, type AuditEvent, cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { DashboardClient } from './dashboard-client.js'

/**
 * Every change is one audit event, written in the transaction of the change: the right action,
 * actor, account and target; none for a refused change; none without its change, and no change
 * without its event.
 */

const password = 'correct horse battery staple'
const operator: Actor = { type: 'admin', id: 'ops1', address: '10.0.0.9', requestId: 'r-1' }

let h: Harness
let seen = new Set<string>()

/** The events written since the last call, oldest first. */
const fresh = async (): Promise<AuditEvent[]> => {
  const events = (await h.ctx.audit.list({ limit: 1000 })).filter((e) => !seen.has(e.id))
  for (const e of events) seen.add(e.id)
  return events.reverse()
}
const actions = async () => (await fresh()).map((e) => e.action)

beforeEach(async () => {
  h = await harness()
  seen = new Set()
  await fresh()
})
afterEach(() => h.close())

describe('the audit log', () => {
  it('records the harness accounts as created by the command line', async () => {
    const events = await h.ctx.audit.list({ limit: 10 })
    expect(events.map((e) => [e.action, e.account, e.actor])).toEqual([
      ['account.created', 'bob', { type: 'cli' }],
      ['account.created', 'alice', { type: 'cli' }],
    ])
    expect(events[1]?.target).toEqual({ type: 'account', id: 'alice' })
    expect(events[1]?.details).toEqual({ plan: 'standard', features: [] })
  })

  it('records API changes with the token that made them, the address and the request id', async () => {
    const sk = await h.token('alice', [...all, 'styles:read'])
    await fresh()
    const created = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, {
      note: 'maps',
      scopes: ['styles:read'],
    })
    expect(created.status).toBe(200)
    const [event, ...more] = await fresh()
    expect(more).toEqual([])
    expect(event).toMatchObject({
      action: 'token.created',
      actor: { type: 'token', id: sk.id, usage: 'sk' },
      account: 'alice',
      target: { type: 'token', id: created.body.id },
      address: '127.0.0.1',
      details: { usage: 'pk', scopes: ['styles:read'] },
    })
    expect(event?.requestId).toMatch(/^[a-z0-9]{8}-[0-9a-z]+$/)
    expect(event?.at).toBe(new Date(T0).toISOString())

    const id = created.body.id as string
    expect(
      (await call(h.app, 'PATCH', `/tokens/v2/alice/${id}`, sk.token, { note: 'x' })).status,
    ).toBe(200)
    expect(await fresh()).toMatchObject([
      { action: 'token.updated', target: { id }, details: { fields: ['note'] } },
    ])
    // Only what changed is named, as when a form sends every field.
    const resent = await call(h.app, 'PATCH', `/tokens/v2/alice/${id}`, sk.token, {
      note: 'x',
      scopes: ['styles:read'],
      allowedUrls: ['https://maps.example'],
    })
    expect(resent.status).toBe(200)
    expect((await fresh()).map((e) => e.details)).toEqual([{ fields: ['allowedUrls'] }])
    expect((await call(h.app, 'DELETE', `/tokens/v2/alice/${id}`, sk.token)).status).toBe(204)
    expect(await fresh()).toMatchObject([
      { action: 'token.deleted', actor: { id: sk.id }, target: { id }, details: { usage: 'pk' } },
    ])
  })

  it('takes the request id from X-Request-Id when it is a plain token, else makes one', async () => {
    const sk = await h.token('alice', all)
    await fresh()
    const send = (id: string) =>
      h.app.inject({
        method: 'POST',
        url: `/tokens/v2/alice?access_token=${sk.token}`,
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        payload: '{}',
      })
    expect((await send('lb-7f3a.2')).statusCode).toBe(200)
    expect((await send('bad id <script>')).statusCode).toBe(200)
    const [given, made] = await fresh()
    expect(given?.requestId).toBe('lb-7f3a.2')
    expect(made?.requestId).toMatch(/^[a-z0-9]{8}-[0-9a-z]+$/)
  })

  it('records a temporary token without its string; a tk actor has no id', async () => {
    const sk = await h.token('alice', all)
    await fresh()
    const expires = new Date(T0 + 600_000).toISOString()
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', sk.token, {
      expires,
      scopes: ['tokens:write'],
    })
    expect(tk.status).toBe(200)
    const again = await call(h.app, 'POST', '/tokens/v2/alice', tk.body.token, {
      expires,
      scopes: [],
    })
    expect(again.status).toBe(200)
    const events = await fresh()
    expect(events).toMatchObject([
      {
        action: 'token.temporary_issued',
        actor: { type: 'token', id: sk.id, usage: 'sk' },
        target: { type: 'token' },
        details: { scopes: ['tokens:write'], expires },
      },
      { action: 'token.temporary_issued', actor: { type: 'token', usage: 'tk' } },
    ])
    expect(events[1]?.actor).toEqual({ type: 'token', usage: 'tk' })
    const text = JSON.stringify(events)
    expect(text).not.toContain(tk.body.token)
    expect(text).not.toContain(again.body.token)
  })

  it('records nothing for a refused change', async () => {
    const sk = await h.token('alice', all)
    const pk = await h.token('alice', ['styles:read'])
    await fresh()
    const refused = [
      await call(h.app, 'POST', '/tokens/v2/alice', sk.token, { scopes: ['no:such'] }),
      await call(h.app, 'POST', '/tokens/v2/alice', pk.token, { scopes: [] }),
      await call(h.app, 'POST', '/tokens/v2/bob', sk.token, { scopes: [] }),
      await call(h.app, 'PATCH', `/tokens/v2/alice/${pk.id}`, sk.token, {
        scopes: ['tokens:write'],
      }),
      await call(h.app, 'PATCH', '/tokens/v2/alice/cnosuchtoken0000000000000', sk.token, {
        note: 'x',
      }),
      await call(h.app, 'DELETE', `/tokens/v2/alice/${h.alice.defaultToken.id}`, sk.token),
      await call(h.app, 'DELETE', `/tokens/v2/bob/${h.bob.defaultToken.id}`, sk.token),
      await call(h.app, 'POST', '/tokens/v2/alice', sk.token, {
        expires: new Date(T0 - 1000).toISOString(),
      }),
    ]
    expect(refused.map((r) => r.status)).toEqual([422, 404, 404, 422, 404, 422, 404, 422])
    // A refusal's sentence is its details (its message is the API's).
    await expect(h.ctx.accounts.create('alice', undefined, [], cliActor)).rejects.toMatchObject({
      details: expect.stringContaining('account alice already exists'),
    })
    await expect(h.ctx.accounts.change('alice', { plan: 'nope' }, operator)).rejects.toMatchObject({
      details: expect.stringContaining('no such plan: nope'),
    })
    await expect(h.ctx.accounts.remove('nobody', operator)).rejects.toMatchObject({
      details: expect.stringContaining('no such account'),
    })
    expect(await fresh()).toEqual([])
  })

  it('records account changes by an operator, once each', async () => {
    await h.ctx.accounts.create('carol', 'pro', ['navigation'], operator)
    await h.ctx.accounts.change('carol', { plan: 'standard', features: [] }, operator)
    await h.ctx.accounts.setDisabled('carol', true, operator)
    await h.ctx.accounts.setDisabled('carol', true, operator) // already: no change, no event
    await h.ctx.accounts.setDisabled('carol', false, operator)
    await h.ctx.holders.invite('carol', operator)
    await h.ctx.accounts.remove('carol', operator)
    const events = await fresh()
    expect(events.map((e) => e.action)).toEqual([
      'account.created',
      'account.changed',
      'account.disabled',
      'account.enabled',
      'account.invited',
      'account.deleted',
    ])
    for (const e of events) {
      expect(e).toMatchObject({
        actor: { type: 'admin', id: 'ops1' },
        account: 'carol',
        target: { type: 'account', id: 'carol' },
        address: '10.0.0.9',
        requestId: 'r-1',
      })
    }
    expect(events[1]?.details).toEqual({ plan: 'standard', features: [], tokensChanged: 1 })
    expect(events[5]?.details).toEqual({ tokensRevoked: 1 })
  })

  it('records webhook endpoints added and removed by an operator key, once each', async () => {
    await h.close()
    h = await harness({ ...adminEnv, WEBHOOK_ALLOW_PRIVATE: '1' })
    seen = new Set()
    await fresh()
    const made = await admin(h.app, 'POST', '/webhooks', {
      url: 'https://127.0.0.1:9/hook#part',
      events: ['token.deleted', 'webhook.created', 'token.deleted'],
    })
    expect(made.status).toBe(201)
    const id = made.body.id as string
    h.clock.now = T0 + 60_000
    expect((await admin(h.app, 'DELETE', `/webhooks/${id}`)).status).toBe(204)
    const events = await fresh()
    expect(events).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f]{13}[0-9a-z]{12}$/),
        at: new Date(T0).toISOString(),
        action: 'webhook.created',
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'webhook', id },
        address: '127.0.0.1',
        requestId: expect.stringMatching(/^[a-z0-9]{8}-[0-9a-z]+$/),
        // As stored: the URL normalised, the actions once each; never the secret.
        details: { url: 'https://127.0.0.1:9/hook', events: ['token.deleted', 'webhook.created'] },
      },
      {
        id: expect.stringMatching(/^[0-9a-f]{13}[0-9a-z]{12}$/),
        at: new Date(T0 + 60_000).toISOString(),
        action: 'webhook.deleted',
        actor: { type: 'admin', id: 'k1' },
        target: { type: 'webhook', id },
        address: '127.0.0.1',
        requestId: expect.stringMatching(/^[a-z0-9]{8}-[0-9a-z]+$/),
      },
    ])
    expect(events[0]?.requestId).not.toBe(events[1]?.requestId)
    expect(JSON.stringify(events)).not.toContain(made.body.secret)
    // Service-wide: in no account's log.
    expect((await admin(h.app, 'GET', '/accounts/alice/audit')).body).toHaveLength(1)
    const listed = await admin(h.app, 'GET', '/audit?action=webhook.created,webhook.deleted')
    expect(listed.status).toBe(200)
    expect(listed.body).toEqual([events[1], events[0]])

    const refused = [
      await admin(h.app, 'POST', '/webhooks', { url: 'ftp://127.0.0.1/' }),
      await admin(h.app, 'POST', '/webhooks', { url: 'https://127.0.0.1/', events: ['no.such'] }),
      await admin(h.app, 'POST', '/webhooks', { url: 'https://nowhere.invalid/' }),
      await admin(h.app, 'DELETE', `/webhooks/${id}`),
      await admin(h.app, 'DELETE', '/webhooks/wh_0000000000000000000'),
      await admin(h.app, 'DELETE', '/webhooks/nope'),
    ]
    expect(refused.map((r) => r.status)).toEqual([422, 422, 422, 404, 404, 404])
    await expect(
      h.ctx.webhooks.service.create('https://127.0.0.1/', ['token.exploded'], operator),
    ).rejects.toThrow('resources are invalid')
    await expect(h.ctx.webhooks.service.remove(id, operator)).rejects.toThrow('Not found')
    expect(await fresh()).toEqual([])
    expect((await admin(h.app, 'GET', '/webhooks')).body).toEqual([])
  })

  it('writes no endpoint without its event', async () => {
    await sql`alter table audit_events rename to audit_events_away`.execute(h.ctx.db)
    try {
      await expect(
        h.ctx.webhooks.service.create('https://93.184.215.14/hook', undefined, operator),
      ).rejects.toThrow()
    } finally {
      await sql`alter table audit_events_away rename to audit_events`.execute(h.ctx.db)
    }
    expect(await h.ctx.webhooks.service.list(undefined, 10)).toEqual([])
    const hook = await h.ctx.webhooks.service.create('https://93.184.215.14/hook', [], operator)
    await sql`alter table audit_events rename to audit_events_away`.execute(h.ctx.db)
    try {
      await expect(h.ctx.webhooks.service.remove(hook.id, operator)).rejects.toThrow()
    } finally {
      await sql`alter table audit_events_away rename to audit_events`.execute(h.ctx.db)
    }
    expect((await h.ctx.webhooks.service.get(hook.id)).id).toBe(hook.id)
    expect(await actions()).toEqual(['webhook.created'])
  })

  it('frees a deleted name an hour later; tokens of the old account stay revoked', async () => {
    const old = await h.token('alice', ['tokens:write'])
    const tk = await call(h.app, 'POST', '/tokens/v2/alice', old.token, {
      expires: new Date(T0 + 3_600_000).toISOString(),
    })
    await h.ctx.accounts.remove('alice', operator)
    await expect(h.ctx.accounts.create('alice', undefined, [], operator)).rejects.toMatchObject({
      details: expect.stringContaining(
        'account alice was deleted at 2026-11-22T12:00:00.000Z; the name can be used again an hour later',
      ),
    })
    h.clock.now = T0 + 3_600_000
    const again = await h.ctx.accounts.create('alice', undefined, [], operator)
    const code = async (token: string) =>
      (await call(h.app, 'GET', `/tokens/v2?access_token=${token}`)).body.code
    expect(await code(again.defaultToken.token as string)).toBe('TokenValid')
    expect(await code(old.token)).toBe('TokenRevoked')
    expect(await code(h.alice.defaultToken.token as string)).toBe('TokenRevoked')
    expect(await code(tk.body.token)).toBe('TokenExpired')
  })

  it('records the dashboard: setup, sign-in failed and succeeded, password change, sign-outs', async () => {
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite('alice', cliActor)
    await b.post(`/account/setup/${link}`, { password, confirm: password })
    await b.get('/account')
    await b.post('/account/sign-out', {})
    expect((await b.signIn('alice', 'wrong password!!')).status).toBe(401)
    expect((await b.signIn('nobody', 'wrong password!!')).status).toBe(401)
    expect((await b.signIn('alice', password)).status).toBe(303)
    await b.get('/account/settings')
    const next = `${password} 2`
    await b.post('/account/settings/password', { current: password, password: next })
    await b.post('/account/sign-out-everywhere', {})
    const events = await fresh()
    expect(events.map((e) => [e.action, e.account, e.actor.type])).toEqual([
      ['account.invited', 'alice', 'cli'],
      ['password.set', 'alice', 'anonymous'],
      ['sessions.ended', 'alice', 'session'],
      ['signin.failed', 'alice', 'anonymous'],
      ['signin.failed', 'nobody', 'anonymous'],
      ['signin.succeeded', 'alice', 'anonymous'],
      ['password.changed', 'alice', 'session'],
      ['sessions.ended', 'alice', 'session'],
    ])
    expect(events[2]?.details).toEqual({ which: 'this' })
    expect(events[7]?.details).toEqual({ which: 'all' })
    expect(events[6]?.actor.id).toMatch(/^[0-9a-f]{16}$/)
    expect(JSON.stringify(events)).not.toContain(password)
  })

  it('refuses sign-in to a disabled account, as a wrong password', async () => {
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite('alice', cliActor)
    await b.post(`/account/setup/${link}`, { password, confirm: password })
    expect((await b.get('/account')).status).toBe(200)
    await h.ctx.accounts.setDisabled('alice', true, operator)
    expect((await b.get('/account')).status).toBe(303)
    expect((await b.signIn('alice', password)).status).toBe(401)
    expect((await actions()).slice(-2)).toEqual(['account.disabled', 'signin.failed'])
  })

  it('writes no event when the change fails, and no change when its event cannot be written', async () => {
    await expect(
      h.ctx.accounts.create('zed', undefined, [], cliActor, async () => {
        throw new Error('the password could not be stored')
      }),
    ).rejects.toThrow('the password could not be stored')
    expect(await h.ctx.accounts.find('zed')).toBeUndefined()
    expect(await fresh()).toEqual([])

    const sk = await h.token('alice', all)
    await fresh()
    await sql`alter table audit_events rename to audit_events_away`.execute(h.ctx.db)
    try {
      const alice = h.alice
      const holder = h.ctx.accounts.holder(alice)
      await expect(
        h.ctx.tokens.update(alice, holder, sk.id, { note: 'changed' }, cliActor),
      ).rejects.toThrow()
      await expect(h.ctx.tokens.remove(alice, sk.id, cliActor)).rejects.toThrow()
      await expect(h.ctx.tokens.create(alice, holder, { note: 'lost' }, cliActor)).rejects.toThrow()
      await expect(h.ctx.accounts.setDisabled('alice', true, cliActor)).rejects.toThrow()
    } finally {
      await sql`alter table audit_events_away rename to audit_events`.execute(h.ctx.db)
    }
    const tokens = await call(h.app, 'GET', '/tokens/v2/alice', sk.token)
    expect(tokens.status).toBe(200)
    expect(tokens.body.map((t: { note: string }) => t.note).sort()).toEqual([
      '',
      'Default public token',
    ])
    expect((await h.ctx.accounts.get('alice')).disabled).toBe(false)
    expect(await fresh()).toEqual([])
  })

  it('lists newest first, per account, by action and time, in pages', async () => {
    const sk = await h.token('alice', all)
    for (let i = 0; i < 3; i++) {
      h.clock.now = T0 + (i + 1) * 60_000
      await call(h.app, 'POST', '/tokens/v2/alice', sk.token, { note: `n${i}` })
    }
    const mine = await h.ctx.audit.list({ username: 'alice', actions: ['token.created'], limit: 2 })
    expect(mine.map((e) => e.at)).toEqual([
      new Date(T0 + 180_000).toISOString(),
      new Date(T0 + 120_000).toISOString(),
    ])
    const rest = await h.ctx.audit.list({
      username: 'alice',
      actions: ['token.created'],
      limit: 2,
      before: mine[1]?.id,
    })
    expect(rest.map((e) => e.at)).toEqual([
      new Date(T0 + 60_000).toISOString(),
      new Date(T0).toISOString(),
    ])
    const window = await h.ctx.audit.list({
      since: new Date(T0 + 60_000).toISOString(),
      until: new Date(T0 + 180_000).toISOString(),
      limit: 10,
    })
    expect(window).toHaveLength(2)
    expect(
      await h.ctx.audit.list({ username: 'bob', actions: ['token.created'], limit: 10 }),
    ).toEqual([])
  })

  it('prunes events past AUDIT_RETENTION_DAYS and keeps the rest', async () => {
    const day = 86_400_000
    await h.close()
    h = await harness({ AUDIT_RETENTION_DAYS: '30' })
    h.clock.now = T0 + 10 * day
    await h.ctx.accounts.create('recent', undefined, [], cliActor)
    h.clock.now = T0 + 31 * day
    expect(await h.ctx.prune()).toBe(2) // alice and bob, made at T0
    expect((await h.ctx.audit.list({ limit: 10 })).map((e) => e.account)).toEqual(['recent'])
  })
})
