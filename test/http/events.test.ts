import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { type Harness, harness } from '../helpers.js'
import { admin, adminEnv, secrets } from './admin-client.js'

interface Sse {
  status: number
  headers: Record<string, string | string[] | undefined>
  /** Every complete frame so far, as written. */
  frames: string[]
  /** Resolves once `count` frames have arrived. */
  until(count: number, ms?: number): Promise<string[]>
  ended: Promise<void>
  close(): void
}

/** An event-stream reader over real HTTP: frames are split on blank lines, nothing else. */
function follow(base: string, headers: Record<string, string> = {}, path = '/admin/v1/events') {
  return new Promise<Sse>((resolve, reject) => {
    const req = request(`${base}${path}`, {
      headers: { authorization: `Bearer ${secrets.k1}`, ...headers },
    })
    req.on('error', reject)
    req.on('response', (res) => {
      const frames: string[] = []
      let buffer = ''
      const waiters: Array<() => void> = []
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let end = buffer.indexOf('\n\n')
        while (end >= 0) {
          frames.push(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf('\n\n')
        }
        for (const w of waiters.splice(0)) w()
      })
      const ended = new Promise<void>((done) => res.on('close', () => done()))
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames,
        ended,
        async until(count, ms = 3_000) {
          const deadline = Date.now() + ms
          while (frames.length < count) {
            if (Date.now() > deadline) throw new Error(`${frames.length} frames: ${frames}`)
            await new Promise<void>((wake) => {
              waiters.push(wake)
              setTimeout(wake, 50)
            })
          }
          return frames.slice(0, count)
        },
        close: () => req.destroy(),
      })
    })
    req.end()
  })
}

const parse = (frame: string) => {
  const fields: Record<string, string> = {}
  for (const line of frame.split('\n')) {
    const at = line.indexOf(': ')
    fields[line.slice(0, at)] = line.slice(at + 2)
  }
  return fields
}

describe('GET /admin/v1/events', () => {
  let h: Harness
  let base: string
  const streams: Sse[] = []

  beforeEach(async () => {
    h = await harness(adminEnv)
    await h.app.listen({ host: '127.0.0.1', port: 0 })
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`
  })
  afterEach(async () => {
    for (const s of streams.splice(0)) s.close()
    await h.close()
  })

  const open = async (headers?: Record<string, string>, path?: string) => {
    const s = await follow(base, headers, path)
    streams.push(s)
    return s
  }

  it('follows the events as they are committed, as the audit log has them', async () => {
    const s = await open()
    expect(s.status).toBe(200)
    expect(s.headers['content-type']).toBe('text/event-stream; charset=utf-8')
    expect(s.headers['cache-control']).toBe('no-store')
    const made = await h.token('alice', ['styles:read'], { note: 'streamed' })
    await h.ctx.tokens.remove(h.alice, made.id, cliActor)
    const frames = await s.until(3)
    expect(frames[0]).toBe('retry: 1000')
    const [created, deleted] = [parse(frames[1] ?? ''), parse(frames[2] ?? '')]
    expect(created.event).toBe('token.created')
    expect(deleted.event).toBe('token.deleted')
    expect(Number(deleted.id)).toBe(Number(created.id) + 1)
    const log = await admin(h.app, 'GET', '/accounts/alice/audit?limit=2')
    expect(JSON.parse(deleted.data ?? '')).toEqual(log.body[0])
    expect(JSON.parse(created.data ?? '')).toEqual(log.body[1])
    expect(JSON.parse(created.data ?? '').target).toEqual({ type: 'token', id: made.id })
  })

  it('starts after the newest event when no position is given', async () => {
    await h.token('alice', [])
    const s = await open()
    await h.ctx.accounts.setDisabled('bob', true, cliActor)
    const frames = await s.until(2)
    expect(frames).toHaveLength(2)
    expect(parse(frames[1] ?? '').event).toBe('account.disabled')
    expect(JSON.parse(parse(frames[1] ?? '').data ?? '').account).toBe('bob')
  })

  it('resumes after Last-Event-ID with every event missed, in order, then follows', async () => {
    const first = await open()
    await h.token('alice', [])
    const [, seen] = await first.until(2)
    const last = parse(seen ?? '').id ?? ''
    first.close()
    await h.token('alice', [], { note: 'missed 1' })
    await h.token('bob', [], { note: 'missed 2' })
    const again = await open({ 'last-event-id': last })
    await h.token('alice', [], { note: 'live' })
    const frames = (await again.until(4)).slice(1).map(parse)
    expect(frames.map((f) => Number(f.id))).toEqual([1, 2, 3].map((n) => Number(last) + n))
    expect(frames.map((f) => JSON.parse(f.data ?? '').account)).toEqual(['alice', 'bob', 'alice'])
    // ?after= says the same; the header wins over it.
    const byQuery = await open({}, `/admin/v1/events?after=${Number(last) + 2}`)
    expect((await byQuery.until(2)).slice(1).map((f) => Number(parse(f).id))).toEqual([
      Number(last) + 3,
    ])
    const both = await open(
      { 'last-event-id': String(Number(last) + 1) },
      '/admin/v1/events?after=0',
    )
    expect((await both.until(3)).slice(1).map((f) => Number(parse(f).id))).toEqual([
      Number(last) + 2,
      Number(last) + 3,
    ])
  })

  it('says reset when events after the position are no longer kept', async () => {
    const s = await open()
    await h.token('alice', [])
    const kept = parse((await s.until(2))[1] ?? '').id ?? ''
    s.close()
    h.clock.now += 169 * 3_600_000 // past EVENT_RETENTION_HOURS (168)
    await h.token('alice', [], { note: 'after the pruning' })
    await h.ctx.prune()
    const again = await open({ 'last-event-id': String(Number(kept) - 1) })
    const frames = await again.until(3)
    expect(frames[1]).toBe('event: reset\ndata: {}')
    expect(parse(frames[2] ?? '').id).toBe(String(Number(kept) + 1))
    // A position the database never reached: reset, then from the newest.
    const ahead = await open({ 'last-event-id': '999999999' })
    await h.token('bob', [])
    const aheadFrames = await ahead.until(3)
    expect(aheadFrames[1]).toBe('event: reset\ndata: {}')
    expect(parse(aheadFrames[2] ?? '').id).toBe(String(Number(kept) + 2))
  })

  it('refuses a position that is no number, and anyone without an operator key', async () => {
    const res = await h.app.inject({
      url: '/admin/v1/events',
      headers: { authorization: `Bearer ${secrets.k1}`, 'last-event-id': 'abc' },
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({
      message: 'resources are invalid',
      details: 'Last-Event-ID must be an event sequence number',
    })
    const anonymous = await h.app.inject({ url: '/admin/v1/events' })
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json()).toEqual({ message: 'Unauthorized' })
    const withToken = await h.app.inject({
      url: '/admin/v1/events',
      headers: { authorization: `Bearer ${h.alice.defaultToken.token}` },
    })
    expect(withToken.statusCode).toBe(401)
  })

  it('ends its streams when the server closes, without waiting for them', async () => {
    const s = await open()
    await s.until(1)
    const started = Date.now()
    await h.app.close()
    await s.ended
    expect(Date.now() - started).toBeLessThan(1_000)
  })
})
