import { afterEach, describe, expect, it, vi } from 'vitest'
import { all, call, type Harness, tampered } from '../helpers.js'
import {
  type Answer,
  answerHeaders,
  caughtUp,
  closeServing,
  serving,
  usageCounts,
} from './serving.js'

/**
 * Retrieve is answered ahead of Fastify when it can be (src/http/ahead/retrieve.ts). Every answer
 * of the fast path is held against Fastify's own for the same request (see serving.ts): same
 * status, same headers in the same order, same body, same log lines, same metrics.
 */
afterEach(closeServing)

const retrieve = (token: string) => `/tokens/v2?access_token=${token}`

describe('the fast path of retrieve', () => {
  it('answers pk, sk and tk exactly as the route does, without Fastify', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const pk = s.h.alice.defaultToken.token as string
    const sk = (await s.h.token(s.h.alice.username, all)).token
    const tk = await call(s.h.app, 'POST', `/tokens/v2/${s.h.alice.username}`, sk, {
      expires: new Date(s.h.clock.now + 600_000).toISOString(),
      scopes: ['tokens:read'],
    })
    expect(tk.status).toBe(200)
    for (const token of [pk, sk, tk.body.token as string]) {
      // Fastify first: an sk not yet cached (PostgreSQL) is found by the route, then cached.
      const route = await s.inject(retrieve(token))
      s.fastify.length = 0
      const fast = await s.socket(retrieve(token))
      expect(s.fastify).toEqual([])
      expect(fast).toEqual(route)
      expect(fast.status).toBe(200)
      expect(fast.headers.map(([name]) => name)).toEqual(answerHeaders)
      expect(JSON.parse(fast.body).code).toBe('TokenValid')
    }
  })

  it('refuses past the limit exactly as the route does, and counts both in the metrics', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '2' })
    const alice = s.h.alice.defaultToken.token as string
    const bob = s.h.bob.defaultToken.token as string
    const fast: Answer[] = []
    const route: Answer[] = []
    for (let i = 0; i < 3; i++) route.push(await s.inject(retrieve(bob)))
    // Validated, uncounted, once every notice so far is in (on PostgreSQL a late one would empty
    // the cache): a token not yet cached goes to Fastify (see below).
    await caughtUp(s.h)
    await s.h.ctx.tokens.validate(alice)
    s.fastify.length = 0
    for (let i = 0; i < 3; i++) fast.push(await s.socket(retrieve(alice)))
    expect(s.fastify).toEqual([])
    expect(fast.map((a) => a.status)).toEqual([200, 200, 429])
    expect(route.map((a) => a.status)).toEqual([200, 200, 429])
    expect(fast[2]).toEqual(route[2])
    expect(fast[2]?.body).toBe('{"message":"Too Many Requests"}')
    expect(fast[2]?.headers.find(([name]) => name === 'retry-after')?.[1]).toBe('60')
    // Counted once the answer is out (as Fastify does): maybe after the client has it.
    const counts = () =>
      [...(s.h as Harness).ctx.metrics.requests.counts()]
        .filter(([labels]) => labels.route === '/tokens/v2')
        .map(([labels, n]) => `${labels.method} ${labels.status} ${n}`)
        .sort()
    await vi.waitFor(() => expect(counts()).toEqual(['GET 200 4', 'GET 429 2']))
    expect(s.h.ctx.checkpoint.book.byName.get('requests')).toEqual({ allowed: 4, limited: 2 })
  })

  it('logs the same two lines as Fastify, with its own request id and the token redacted', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const pk = s.h.alice.defaultToken.token as string
    s.lines.length = 0
    await s.inject(retrieve(pk))
    const route = s.lines.splice(0)
    await s.socket(retrieve(pk))
    await vi.waitFor(() => expect(s.lines).toHaveLength(2))
    const fast = s.lines.splice(0)
    const shape = (line: string) => {
      const { time, pid, hostname, reqId, responseTime, ...rest } = JSON.parse(line)
      expect(typeof responseTime === 'number' || responseTime === undefined).toBe(true)
      expect(typeof reqId).toBe('string')
      return rest
    }
    expect(fast.map(shape)).toEqual(route.map(shape))
    expect(fast.map(shape)).toEqual([
      {
        level: 30,
        req: {
          method: 'GET',
          url: '/tokens/v2?access_token=[redacted]',
          remoteAddress: '127.0.0.1',
        },
        msg: 'incoming request',
      },
      { level: 30, res: { statusCode: 200 }, msg: 'request completed' },
    ])
    const ids = [...route, ...fast].map((l) => JSON.parse(l).reqId)
    expect(ids[0]).toBe(ids[1])
    expect(ids[2]).toBe(ids[3])
    expect(ids[0]).not.toBe(ids[2])
    expect(fast.join('')).not.toContain(pk)
  })

  it('answers tokens not valid as the route does, and leaves the rest to Fastify uncounted', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const pk = s.h.alice.defaultToken.token as string
    const gone = await s.h.token(s.h.alice.username, ['styles:read'])
    const sk = (await s.h.token(s.h.alice.username, all)).token
    const path = `/tokens/v2/${s.h.alice.username}/${gone.id}`
    expect((await call(s.h.app, 'DELETE', path, sk)).status).toBe(204)
    // Not valid, counted against the caller's address: answered here too. Deleted: once looked
    // up (by the route, first), its id is known gone on this instance, and answered here too.
    for (const [url, code] of [
      ['/tokens/v2?access_token=not-a-token', 'TokenMalformed'],
      [retrieve(tampered(pk)), 'TokenInvalid'],
      [retrieve(gone.token), 'TokenRevoked'],
    ] as const) {
      const route = await s.inject(url)
      s.fastify.length = 0
      const fast = await s.socket(url)
      expect(s.fastify, url).toEqual([])
      expect(fast, url).toEqual(route)
      expect(JSON.parse(fast.body).code).toBe(code)
    }
    const others: [string, 'GET' | 'HEAD'][] = [
      ['/tokens/v2?access_token=', 'GET'],
      ['/tokens/v2?other=1', 'GET'],
      [`/tokens/v2/?access_token=${pk}`, 'GET'],
      [`//tokens/v2?access_token=${pk}`, 'GET'],
      [retrieve(pk), 'HEAD'],
    ]
    for (const [url, method] of others) {
      const route = await s.inject(url, method)
      s.fastify.length = 0
      const socket = await s.socket(url, method)
      expect(s.fastify, url).toEqual([`${method} ${url}`])
      expect(socket, url).toEqual(route)
    }
  })

  it('leaves a token not yet cached to the route, which validates it once', async () => {
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' })
    const bob = s.h.bob.defaultToken
    const url = retrieve(bob.token as string)
    const first = await s.socket(url)
    expect(s.fastify).toEqual([`GET ${url}`])
    s.fastify.length = 0
    const second = await s.socket(url)
    expect(s.fastify).toEqual([])
    expect(second).toEqual(first)
    // Each validation counts the token's usage: two requests, two validations.
    expect(await usageCounts(s.h, bob.id)).toEqual([2])
  })

  it('answers requests pipelined on one connection in order, with or without a body', async () => {
    // A request without a body is taken as read at once; one with a body is drained by Node,
    // before the next request is read. The large body is past the socket's high-water mark
    // (16 KiB on Node 20, 64 KiB from 22 on), where a body left undrained stops the connection.
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' }, 'warn')
    const pk = s.h.alice.defaultToken.token as string
    const head = `GET ${retrieve(pk)} HTTP/1.1\r\nHost: tessera\r\n`
    const big = 'x'.repeat(400_000)
    const requests = [
      `${head}\r\n`,
      `${head}Content-Length: 5\r\n\r\nhello`,
      `${head}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
      `${head}Content-Length: 0\r\n\r\n`,
      `${head}Content-Length: ${big.length}\r\n\r\n${big}`,
      `${head}\r\n`,
    ]
    const expected = (await s.inject(retrieve(pk))).body
    s.fastify.length = 0
    const read = await s.raw(requests.join(''), requests.length)
    const answers = read.split('HTTP/1.1 ').slice(1)
    expect(answers.map((a) => a.slice(0, 6))).toEqual(requests.map(() => '200 OK'))
    expect(answers.map((a) => a.slice(a.indexOf('\r\n\r\n') + 4))).toEqual(
      requests.map(() => expected),
    )
    expect(s.fastify).toEqual([])
  })

  it('drains a body whose Content-Length comes after 100 other headers', async () => {
    // Node 20 frames a request by all its headers but keeps the first 100 (maxHeadersCount) in
    // `req.headers`: such a request is not taken as read, and its body is drained. Node 22 and
    // later refuse a request with more than 100 headers: 431, and the connection closes.
    const s = await serving({ RATE_LIMIT_PER_MINUTE: '1000' }, 'warn')
    const pk = s.h.alice.defaultToken.token as string
    const head = `GET ${retrieve(pk)} HTTP/1.1\r\nHost: tessera\r\n`
    const big = 'x'.repeat(400_000)
    const filler = Array.from({ length: 100 }, (_, i) => `X-Filler-${i}: x\r\n`).join('')
    const expected = (await s.inject(retrieve(pk))).body
    const read = await s.raw(
      `${head}${filler}Content-Length: ${big.length}\r\n\r\n${big}${head}\r\n`,
      2,
    )
    const answers = read.split('HTTP/1.1 ').slice(1)
    if (Number(process.versions.node.split('.')[0]) < 22) {
      expect(answers.map((a) => a.slice(a.indexOf('\r\n\r\n') + 4))).toEqual([expected, expected])
    } else {
      expect(answers).toEqual([expect.stringMatching(/^431 Request Header Fields Too Large\r\n/)])
    }
  })

  it('takes HTTPS behind a proxy, and leaves plain HTTP and logged requests to Fastify', async () => {
    const url = (s: Harness) => retrieve(s.alice.defaultToken.token as string)
    const https = { 'x-forwarded-proto': 'https' }
    /** Asks until the token is cached (a change feed that blinked under load empties the cache). */
    const cached = (s: Awaited<ReturnType<typeof serving>>) =>
      vi.waitFor(
        async () => {
          expect((await s.socket(url(s.h), 'GET', https)).status).toBe(200)
          expect(s.h.ctx.tokens.peek(s.h.alice.defaultToken.token as string)).toBeDefined()
        },
        { timeout: 10_000 },
      )
    const quiet = await serving({ RATE_LIMIT_PER_MINUTE: '1000', TRUST_PROXY: '1' }, 'warn')
    expect((await quiet.socket(url(quiet.h))).status).toBe(403)
    await cached(quiet)
    quiet.fastify.length = 0
    expect((await quiet.socket(url(quiet.h), 'GET', https)).status).toBe(200)
    expect(quiet.fastify).toEqual([])
    // Not valid: counted against the client's address from X-Forwarded-For, by Fastify.
    const junk = '/tokens/v2?access_token=not-a-token'
    const forwarded = { ...https, 'x-forwarded-for': '203.0.113.9' }
    expect((await quiet.socket(junk, 'GET', forwarded)).body).toBe('{"code":"TokenMalformed"}')
    expect(quiet.fastify).toEqual([`GET ${junk}`])
    await closeServing()
    // Logged, the address is the client's from X-Forwarded-For: Fastify's work, so its path.
    const logged = await serving({ RATE_LIMIT_PER_MINUTE: '1000', TRUST_PROXY: '1' })
    await cached(logged)
    logged.fastify.length = 0
    expect((await logged.socket(url(logged.h), 'GET', https)).status).toBe(200)
    expect(logged.fastify).toEqual([`GET ${url(logged.h)}`])
  })
})
