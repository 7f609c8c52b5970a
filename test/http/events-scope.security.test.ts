import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Actor } from '../../src/audit/events.js'
import { type Harness, harness } from '../helpers.js'
import { admin, secrets } from './admin-client.js'
import { DashboardClient } from './dashboard-client.js'

/**
 * The event stream as a `verifier` key sees it: only the events @tessera/verifier acts on,
 * each cut to what it reads (never the client address, the actor, the request id or details
 * such as an invitee's email); positions and resumption as for an `admin` key, which keeps the
 * whole audit event.
 */

const verifierSecret = 'edge-one-0123456789abcdefghijklmnopqrstuvwxyz'
const env = { ADMIN_KEYS: `k1:${secrets.k1},vf@verifier:${verifierSecret}` }

interface Frame {
  id?: string
  event?: string
  data?: string
}

/** Frames of the stream (split on blank lines) until `done` holds or `ms` passes. */
function read(
  base: string,
  key: string,
  path: string,
  done: (frames: Frame[]) => boolean,
  headers: Record<string, string> = {},
  ms = 5_000,
): Promise<Frame[]> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, {
      headers: { authorization: `Bearer ${key}`, ...headers },
    })
    const timer = setTimeout(() => {
      req.destroy()
      reject(new Error(`the stream did not end as expected: ${JSON.stringify(frames)}`))
    }, ms)
    const frames: Frame[] = []
    req.on('error', reject)
    req.on('response', (res) => {
      expect(res.statusCode).toBe(200)
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let end = buffer.indexOf('\n\n')
        while (end >= 0) {
          const frame: Frame = {}
          for (const line of buffer.slice(0, end).split('\n')) {
            const at = line.indexOf(': ')
            const field = line.slice(0, at)
            if (field === 'id' || field === 'event' || field === 'data') {
              frame[field] = line.slice(at + 2)
            }
          }
          frames.push(frame)
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf('\n\n')
        }
        if (done(frames)) {
          clearTimeout(timer)
          req.destroy()
          resolve(frames)
        }
      })
    })
    req.end()
  })
}

/** Someone signed in to the dashboard, over HTTP: every field the audit log may hold. */
const dana: Actor = {
  type: 'session',
  id: '0123456789abcdef',
  login: 'dana.login',
  method: 'password',
  address: '203.0.113.9',
  requestId: 'req-dana-1',
}

describe('GET /admin/v1/events with a verifier key', () => {
  let h: Harness
  let base: string
  let newest: number
  let updatedId: string
  let deletedId: string
  let rolled: { old: string; new: string }

  beforeEach(async () => {
    h = await harness(env)
    await h.app.listen({ host: '127.0.0.1', port: 0 })
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`
    const holder = h.ctx.accounts.holder(h.alice)
    // What the verifier does not need, with addresses, logins, emails and typed secrets.
    await h.ctx.members.invite(
      'alice',
      { email: 'invitee.carla@example.com', role: 'viewer' },
      dana,
    )
    const link = await admin(h.app, 'POST', '/accounts/alice/portal-links', {
      email: 'portal.erin@example.com',
      role: 'owner',
    })
    expect(link.status).toBe(201)
    const browser = new DashboardClient(h.app, '198.51.100.23')
    expect((await browser.signIn('hunter2mistypedpw', 'whatever it was')).status).toBe(401)
    // What it needs: token changes, a roll, an account disabled.
    const a = await h.ctx.tokens.create(h.alice, holder, { scopes: ['styles:read'] }, dana)
    const b = await h.ctx.tokens.create(h.alice, holder, { scopes: ['styles:read'] }, dana)
    const c = await h.ctx.tokens.create(h.alice, holder, { scopes: ['styles:read'] }, dana)
    await h.ctx.tokens.update(h.alice, holder, a.id, { note: 'renamed' }, dana)
    const next = await h.ctx.tokens.roll(h.alice, holder, c.id, {}, dana)
    await h.ctx.tokens.remove(h.alice, b.id, dana)
    await h.ctx.credits.set({ account: 'alice', tokenId: a.id }, { remaining: 5 }, dana)
    await h.ctx.credits.set({ account: 'alice' }, { remaining: 7 }, dana)
    await h.ctx.accounts.setDisabled('bob', true, dana)
    // The newest event is one a verifier does not get: its position must still advance.
    await h.ctx.members.invite('alice', { email: 'last.invitee@example.com', role: 'viewer' }, dana)
    updatedId = a.id
    deletedId = b.id
    rolled = { old: c.id, new: next.id }
    newest = await h.ctx.events.newest()
  })
  afterEach(() => h.close())

  const audit = async () =>
    (await admin(h.app, 'GET', '/audit?limit=100')).body.toReversed() as Array<
      Record<string, unknown> & { action: string; id: string }
    >
  /** Until the stream's position (the id of its last frame) is the newest event. */
  const caughtUp = (frames: Frame[]) => frames.some((f) => Number(f.id) === newest)

  it('sends only the events it acts on, without address, actor, request id or emails', async () => {
    const frames = await read(base, verifierSecret, '/admin/v1/events?after=0', caughtUp)
    const text = JSON.stringify(frames)
    for (const secret of [
      '203.0.113.9',
      '198.51.100.23',
      '127.0.0.1',
      'dana.login',
      'req-dana-1',
      '0123456789abcdef',
      'invitee.carla',
      'portal.erin',
      'last.invitee',
      '@example.com',
      'hunter2mistypedpw',
      '"address"',
      '"actor"',
      '"requestId"',
      'member.invited',
      'signin.failed',
      'portal',
      'token.created',
    ]) {
      expect(text).not.toContain(secret)
    }
    const events = frames.filter((f) => f.data !== undefined)
    expect(events.map((f) => f.event)).toEqual([
      'token.updated',
      'token.rolled',
      'token.deleted',
      'credits.changed',
      'credits.changed',
      'account.disabled',
    ])
    const log = await audit()
    const seen = events.map((f) => JSON.parse(f.data ?? ''))
    const keep = ['id', 'at', 'action', 'account', 'target'] as const
    const pick = (e: Record<string, unknown> | undefined) =>
      Object.fromEntries(keep.filter((k) => e !== undefined && k in e).map((k) => [k, e?.[k]]))
    const inLog = (action: string) => pick(log.find((x) => x.action === action))
    expect(seen[0]).toEqual(inLog('token.updated'))
    expect(seen[0].target).toEqual({ type: 'token', id: updatedId })
    expect(seen[1]).toEqual({ ...inLog('token.rolled'), details: { previous: rolled.old } })
    expect(seen[1].target).toEqual({ type: 'token', id: rolled.new })
    expect(seen[2]).toEqual(inLog('token.deleted'))
    expect(seen[2].target).toEqual({ type: 'token', id: deletedId })
    const credits = log.filter((x) => x.action === 'credits.changed')
    // What the verifier reads of credits.changed: the account and the balance's target.
    expect(seen[3]).toEqual(pick(credits[0]))
    expect(seen[3].target).toEqual({ type: 'token', id: updatedId })
    expect(seen[4]).toEqual(pick(credits[1]))
    expect(seen[4].target).toEqual({ type: 'account', id: 'alice' })
    expect(seen[5]).toEqual(inLog('account.disabled'))
    expect(seen[5].account).toBe('bob')
    // Ids are the positions an admin key sees, ascending; the last frame is the newest position.
    const ids = frames.filter((f) => f.id !== undefined).map((f) => Number(f.id))
    expect(ids).toEqual(ids.toSorted((x, y) => x - y))
    expect(ids.at(-1)).toBe(newest)
  })

  it('resumes from a position as an admin key does', async () => {
    const all = await read(base, secrets.k1, '/admin/v1/events?after=0', caughtUp)
    const updated = all.find((f) => f.event === 'token.updated') as Frame
    const rolledFrame = all.find((f) => f.event === 'token.rolled') as Frame
    const after = await read(base, verifierSecret, '/admin/v1/events', caughtUp, {
      'last-event-id': updated.id as string,
    })
    const events = after.filter((f) => f.data !== undefined)
    expect(events.map((f) => f.event)).toEqual([
      'token.rolled',
      'token.deleted',
      'credits.changed',
      'credits.changed',
      'account.disabled',
    ])
    expect(events[0]?.id).toBe(rolledFrame.id)
    expect(after.some((f) => f.event === 'reset')).toBe(false)
  })

  it('leaves the admin key the whole audit event, every one', async () => {
    const frames = await read(base, secrets.k1, '/admin/v1/events?after=0', caughtUp)
    const events = frames.filter((f) => f.data !== undefined)
    const log = await audit()
    expect(events.map((f) => JSON.parse(f.data ?? ''))).toEqual(log)
    expect(events.map((f) => f.event)).toEqual(log.map((e) => e.action))
    const text = JSON.stringify(frames)
    for (const full of ['203.0.113.9', 'invitee.carla@example.com', 'hunter2mistypedpw']) {
      expect(text).toContain(full)
    }
  })
})
