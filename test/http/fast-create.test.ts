import { connect } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, type Harness } from '../helpers.js'
import { type Answer, answerHeaders, closeServing, serving, usageCounts } from './serving.js'

/**
 * The create of a permanent token is answered ahead of Fastify when it is the plain case
 * (src/http/ahead/create.ts). Every answer is held against Fastify's own for the same request
 * (see serving.ts); a create makes a new token each time, so its id, string and dates differ
 * between the two and are compared by their shape.
 */
afterEach(closeServing)

const tokens = (username: string, token: string) => `/tokens/v2/${username}?access_token=${token}`

/** An answer with what differs from one create to the next taken out. */
const shape = (answer: Answer) => {
  const body = JSON.parse(answer.body)
  if (answer.status !== 200) return { ...answer, body }
  if (body.id === undefined) {
    // A temporary token.
    expect(body.token).toMatch(/^tk\./)
    return {
      ...answer,
      headers: answer.headers.filter(([n]) => n !== 'x-rate-limit-reset'),
      body: { ...body, token: 'tk' },
    }
  }
  expect(body.id).toMatch(/^[A-Za-z0-9_-]{10,}$/)
  expect(body.token).toMatch(body.usage === 'sk' ? /^sk\./ : /^pk\./)
  expect(body.created).toBe(body.modified)
  const { id, token, created, modified, ...rest } = body
  // The limit's window may turn between two requests; its name and limit may not differ.
  const headers = answer.headers.map(([name, value]) =>
    name === 'x-rate-limit-reset' ? [name, 'reset'] : [name, value],
  )
  return { ...answer, headers, body: rest }
}

const created = async (h: Harness, id: string) => {
  const account = await h.ctx.accounts.find(h.alice.username)
  return account === undefined ? undefined : h.ctx.tokens.get(account, id)
}

describe('the fast path of create', () => {
  it('creates a token exactly as the route does, without Fastify, and audits it the same', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    const url = tokens(s.h.alice.username, sk.token)
    const body = JSON.stringify({
      note: 'ci',
      scopes: ['tokens:read'],
      allowedUrls: ['https://a.example'],
    })
    const route = await s.inject(url, 'POST', {}, body)
    s.fastify.length = 0
    const fast = await s.socket(url, 'POST', {}, body)
    expect(s.fastify).toEqual([])
    expect(shape(fast)).toEqual(shape(route))
    expect(fast.status).toBe(200)
    expect(fast.headers.map(([name]) => name)).toEqual(answerHeaders)
    const made = JSON.parse(fast.body)
    expect(made).toMatchObject({
      usage: 'sk',
      note: 'ci',
      scopes: ['tokens:read'],
      allowedUrls: ['https://a.example'],
      default: false,
    })
    // Stored, valid, and audited with the same actor as the route's create.
    expect((await created(s.h, made.id))?.id).toBe(made.id)
    const check = await s.socket(`/tokens/v2?access_token=${made.token}`)
    expect(JSON.parse(check.body).code).toBe('TokenValid')
    const events = await s.h.ctx.audit.list({ username: s.h.alice.username, limit: 10 })
    const byToken = events.filter((e) => e.action === 'token.created' && e.actor.type === 'token')
    // Newest first.
    expect(byToken.map((e) => e.target.id)).toEqual([made.id, JSON.parse(route.body).id])
    const [fastEvent, routeEvent] = byToken
    expect(fastEvent).toMatchObject({
      actor: { type: 'token', usage: 'sk', id: sk.id },
      address: '127.0.0.1',
      requestId: expect.stringMatching(/^[A-Za-z0-9]{8}-[0-9a-z]+$/),
    })
    const { id: _f, at: _fa, target: _ft, requestId: fastId, ...fastRest } = fastEvent ?? {}
    const { id: _r, at: _ra, target: _rt, requestId: routeId, ...routeRest } = routeEvent ?? {}
    expect(fastRest).toEqual(routeRest)
    expect(fastId).not.toBe(routeId)
  })

  it('answers every body of a token it takes as the route does, temporary tokens included', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    await s.h.ctx.tokens.validate(sk.token)
    const url = tokens(s.h.alice.username, sk.token)
    const expires = new Date(s.h.clock.now + 600_000).toISOString()
    const bodies: [string, number][] = [
      [JSON.stringify({ expires, scopes: ['tokens:read'] }), 200],
      [JSON.stringify({ expires, allowedUrls: ['https://a.example'] }), 422],
      [JSON.stringify({ expires: null }), 422],
      [JSON.stringify({ expires: 'soon' }), 422],
      ['{"note":"x","other":1}', 200],
      ['{"scopes":["no-such-scope"]}', 422],
      ['{"note":', 422],
      ['{"note":5}', 422],
      ['[]', 422],
      ['null', 422],
      [' ', 422],
      [`${'['.repeat(40)}${']'.repeat(40)}`, 422],
    ]
    for (const [body, status] of bodies) {
      const route = await s.inject(url, 'POST', {}, body)
      s.fastify.length = 0
      const fast = await s.socket(url, 'POST', {}, body)
      expect(s.fastify, body).toEqual([])
      expect(fast.status, body).toBe(status)
      expect(shape(fast), body).toEqual(shape(route))
      // Fastify closes the connection after a body its parser refused, and only then.
      const closes = fast.headers.some(
        ([name, value]) => name === 'connection' && value === 'close',
      )
      expect(closes, body).toBe(body === '{"note":' || body === ' ' || body.startsWith('[['))
    }
    // Each request metered its token once: two requests a body (the warming validate none).
    expect(await usageCounts(s.h, sk.id)).toEqual([2 * bodies.length])
  })

  it('leaves every other create to Fastify before reading its body, validating the token once', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    const reader = await s.h.token(s.h.alice.username, ['tokens:read'])
    const bobs = await s.h.token(s.h.bob.username, all)
    const pk = s.h.alice.defaultToken.token as string
    const alice = s.h.alice.username
    const cases: [string, string, number][] = [
      [tokens(alice, pk), '{"note":"x"}', 404],
      [tokens(alice, reader.token), '{"note":"x"}', 404],
      [tokens(alice, bobs.token), '{"note":"x"}', 404],
      [tokens(alice, 'not-a-token'), '{"note":"x"}', 401],
      [tokens('nobody', sk.token), '{"note":"x"}', 404],
      [`/tokens/v2/${alice}/?access_token=${sk.token}`, '{"note":"x"}', 200],
      [
        `/tokens/v2/%${alice.charCodeAt(0).toString(16)}${alice.slice(1)}?access_token=${sk.token}`,
        '{"note":"x"}',
        200,
      ],
      [`/tokens/v2/${alice}?other=1`, '{"note":"x"}', 401],
    ]
    for (const [url, body, status] of cases) {
      const route = await s.inject(url, 'POST', {}, body)
      s.fastify.length = 0
      const socket = await s.socket(url, 'POST', {}, body)
      expect(s.fastify, `${url} ${body}`).toEqual([`POST ${url}`])
      expect(socket.status, `${url} ${body}`).toBe(status)
      expect(shape(socket), `${url} ${body}`).toEqual(shape(route))
    }
    // Each request metered its token once (by the guard): two requests per case, the reader's
    // refused for the scope it lacks.
    await s.h.ctx.usage.flush()
    const day = { from: s.h.clock.now - 86_400_000, to: s.h.clock.now + 60_000, token: reader.id }
    expect(await s.h.ctx.usage.totals(alice, day)).toEqual({ scope_missing: 2 })
  })

  it('leaves other content types to Fastify, before reading their body', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    await s.h.ctx.tokens.validate(sk.token)
    const url = tokens(s.h.alice.username, sk.token)
    const body = '{"scopes":["tokens:read"]}'
    const types: [Record<string, string>, number][] = [
      [{ 'content-type': 'text' }, 422],
      [{ 'content-type': '' }, 422],
      [{ 'content-type': 'application/json charset=utf-8' }, 422],
      [{ 'content-type': 'application/json; charset=utf-8' }, 200],
      [{ 'content-type': 'text/plain' }, 200],
    ]
    for (const [headers, status] of types) {
      const route = await s.inject(url, 'POST', headers, body)
      s.fastify.length = 0
      const socket = await s.socket(url, 'POST', headers, body)
      expect(s.fastify, headers['content-type']).toEqual([`POST ${url}`])
      expect(socket.status, headers['content-type']).toBe(status)
      expect(shape(socket), headers['content-type']).toEqual(shape(route))
    }
  })

  it('hands a token revoked while its body came to the guard, which refuses it', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' }, 'warn')
    const sk = await s.h.token(s.h.alice.username, all)
    await s.h.ctx.tokens.validate(sk.token)
    const url = tokens(s.h.alice.username, sk.token)
    const body = '{"scopes":["tokens:read"]}'
    const port = (s.app.server.address() as { port: number }).port
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port })
      let read = ''
      socket.setEncoding('utf8')
      socket.on('data', (d) => {
        read += d
        if (read.endsWith('}')) socket.end()
      })
      socket.on('close', () => resolve(read))
      socket.on('error', reject)
      socket.write(
        `POST ${url} HTTP/1.1\r\nHost: tessera\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n`,
      )
      // The headers are taken (the token cached and valid), then the token is deleted.
      setTimeout(async () => {
        const account = await s.h.ctx.accounts.find(s.h.alice.username)
        if (account === undefined) return reject(new Error('no account'))
        await s.h.ctx.tokens.remove(account, sk.id, cliActor)
        socket.write(body)
      }, 50)
    })
    expect(answer.slice(0, 25)).toBe('HTTP/1.1 401 Unauthorized')
    expect(answer.slice(answer.indexOf('\r\n\r\n') + 4)).toBe(
      '{"message":"Unauthorized","details":"the token was revoked (deleted, or its account is gone or disabled)"}',
    )
    expect(s.fastify).toEqual([`POST ${url}`])
  })

  it('finishes a create whose body comes while the server closes', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' }, 'warn')
    const sk = await s.h.token(s.h.alice.username, all)
    await s.h.ctx.tokens.validate(sk.token)
    const url = tokens(s.h.alice.username, sk.token)
    const port = (s.app.server.address() as { port: number }).port
    const expires = new Date(s.h.clock.now + 600_000).toISOString()
    // A temporary token: the kind of body an earlier version handed to Fastify, which answered
    // its own 503 once closing.
    const body = JSON.stringify({ expires, scopes: ['tokens:read'] })
    let closed: Promise<undefined> | undefined
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port })
      let read = ''
      socket.setEncoding('utf8')
      socket.on('data', (d) => {
        read += d
        if (read.endsWith('}')) socket.end()
      })
      socket.on('close', () => resolve(read))
      socket.on('error', reject)
      socket.write(
        `POST ${url} HTTP/1.1\r\nHost: tessera\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n`,
        () =>
          setTimeout(() => {
            closed = s.app.close()
            setTimeout(() => socket.write(body), 50)
          }, 50),
      )
    })
    await closed
    expect(answer.slice(0, 15)).toBe('HTTP/1.1 200 OK')
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).token).toMatch(/^tk\./)
  })

  it('leaves a token not yet cached to the guard, which validates it once', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    // Made by another instance's way: the record is in the database, not in this cache.
    s.h.ctx.tokens.forget([sk.id])
    const url = tokens(s.h.alice.username, sk.token)
    const body = '{"note":"a","scopes":["tokens:read"]}'
    const first = await s.socket(url, 'POST', {}, body)
    expect(s.fastify).toEqual([`POST ${url}`])
    s.fastify.length = 0
    const second = await s.socket(url, 'POST', {}, body)
    expect(s.fastify).toEqual([])
    expect([first.status, second.status]).toEqual([200, 200])
    expect(shape(first).headers).toEqual(shape(second).headers)
    expect(await usageCounts(s.h, sk.id)).toEqual([2])
  })

  it('refuses past the limit and answers the create’s own errors as the route does', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '3' })
    const alice = await s.h.token(s.h.alice.username, all)
    const bob = await s.h.token(s.h.bob.username, all)
    // A scope the token lacks: the create's own 422.
    const wider = JSON.stringify({ scopes: ['styles:read'] })
    // Validated once, uncounted: a token not yet cached goes to Fastify (see below).
    await s.h.ctx.tokens.validate(alice.token)
    const route: Answer[] = []
    const fast: Answer[] = []
    for (const body of ['{}', wider, '{}', '{}']) {
      route.push(await s.inject(tokens(s.h.bob.username, bob.token), 'POST', {}, body))
    }
    s.fastify.length = 0
    for (const body of ['{}', wider, '{}', '{}']) {
      fast.push(await s.socket(tokens(s.h.alice.username, alice.token), 'POST', {}, body))
    }
    expect(s.fastify).toEqual([])
    expect(fast.map((a) => a.status)).toEqual([200, 422, 200, 429])
    expect(route.map((a) => a.status)).toEqual([200, 422, 200, 429])
    expect(fast.map(shape)).toEqual(route.map(shape))
    expect(fast[3]?.body).toBe('{"message":"Too Many Requests"}')
    expect(fast[3]?.headers.find(([name]) => name === 'retry-after')?.[1]).toBe('60')
    const counts = () =>
      [...(s.h as Harness).ctx.metrics.requests.counts()]
        .filter(([labels]) => labels.route === '/tokens/v2/:username')
        .map(([labels, n]) => `${labels.method} ${labels.status} ${n}`)
        .sort()
    await vi.waitFor(() => expect(counts()).toEqual(['POST 200 4', 'POST 422 2', 'POST 429 2']))
  })

  it('logs the same two lines as Fastify, with the token redacted', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const sk = await s.h.token(s.h.alice.username, all)
    const url = tokens(s.h.alice.username, sk.token)
    s.lines.length = 0
    await s.inject(url, 'POST', {}, '{}')
    const route = s.lines.splice(0)
    s.fastify.length = 0
    await s.socket(url, 'POST', {}, '{}')
    expect(s.fastify).toEqual([])
    await vi.waitFor(() => expect(s.lines).toHaveLength(2))
    const fast = s.lines.splice(0)
    const fields = (line: string) => {
      const { time, pid, hostname, reqId, responseTime, ...rest } = JSON.parse(line)
      expect(typeof reqId).toBe('string')
      return rest
    }
    expect(fast.map(fields)).toEqual(route.map(fields))
    expect(fast.map(fields)[0]).toEqual({
      level: 30,
      req: {
        method: 'POST',
        url: `/tokens/v2/${s.h.alice.username}?access_token=[redacted]`,
        remoteAddress: '127.0.0.1',
      },
      msg: 'incoming request',
    })
    expect(fast.join('')).not.toContain(sk.token)
    // The id in the log is the one in the audit log.
    const reqId = JSON.parse(fast[0] as string).reqId
    expect(JSON.parse(fast[1] as string).reqId).toBe(reqId)
    const [event] = await s.h.ctx.audit.list({ username: s.h.alice.username, limit: 1 })
    expect(event?.requestId).toBe(reqId)
  })

  it('answers creates pipelined on one connection, bodies in pieces, and survives a body cut short', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' }, 'warn')
    const sk = await s.h.token(s.h.alice.username, all)
    const url = tokens(s.h.alice.username, sk.token)
    const note = 'n'.repeat(100)
    const body = JSON.stringify({ note, scopes: ['tokens:read'] })
    const head = `POST ${url} HTTP/1.1\r\nHost: tessera\r\nContent-Type: application/json\r\n`
    const post = `${head}Content-Length: ${body.length}\r\n\r\n`
    const temporary = JSON.stringify({ expires: new Date(s.h.clock.now + 60_000).toISOString() })
    const tk = `${head}Content-Length: ${temporary.length}\r\n\r\n`
    await s.h.ctx.tokens.validate(sk.token)
    s.fastify.length = 0
    const read = await s.raw(`${post}${body}${tk}${temporary}${post}${body}`, 3)
    const answers = read.split('HTTP/1.1 ').slice(1)
    expect(answers.map((a) => a.slice(0, 6))).toEqual(['200 OK', '200 OK', '200 OK'])
    const bodies = answers.map((a) => JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4)))
    expect(bodies.map((b) => b.note ?? b.token.slice(0, 3))).toEqual([note, 'tk.', note])
    expect(s.fastify).toEqual([])

    // A body written in pieces, and a connection that closes with half of it sent.
    const pieces = await new Promise<string>((resolve, reject) => {
      const socket = connect({
        host: '127.0.0.1',
        port: (s.app.server.address() as { port: number }).port,
      })
      let answer = ''
      socket.setEncoding('utf8')
      socket.on('data', (d) => {
        answer += d
        if (answer.endsWith('}')) socket.end()
      })
      socket.on('close', () => resolve(answer))
      socket.on('error', reject)
      socket.write(post)
      socket.write(body.slice(0, 50))
      setTimeout(() => socket.write(body.slice(50)), 50)
    })
    expect(pieces.slice(0, 15)).toBe('HTTP/1.1 200 OK')
    await new Promise<void>((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port: (s.app.server.address() as { port: number }).port,
      })
      socket.write(post + body.slice(0, 10), () => socket.destroy())
      socket.on('close', () => resolve())
    })
    const after = await s.socket(url, 'POST', {}, body)
    expect(after.status).toBe(200)
    // Two pipelined, one in pieces, one after: none of the one cut short.
    const events = await s.h.ctx.audit.list({ username: s.h.alice.username, limit: 100 })
    const permanent = events.filter(
      (e) => e.action === 'token.created' && e.actor.type === 'token' && e.details?.usage === 'sk',
    )
    expect(permanent).toHaveLength(4)
  })
})
