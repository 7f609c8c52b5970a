import { createServer } from 'node:http'
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closeSilentConnections, jsonDepthExceeds, limits } from '../../src/http/limits.js'
import { all, call, type Harness, harness } from '../helpers.js'

let h: Harness
let sk: string
beforeAll(async () => {
  h = await harness()
  sk = (await h.token('alice', all)).token
})
afterAll(() => h.close())

const url = (i: number) => `https://example.com/${String(i).padStart(4, '0')}/${'p'.repeat(2023)}`

describe('request bodies', () => {
  it('takes the largest valid body: 100 allowed URLs of 2,048 characters and a full note', async () => {
    const allowedUrls = Array.from({ length: 100 }, (_, i) => url(i))
    expect(allowedUrls[0]).toHaveLength(2048)
    const body = { note: 'n'.repeat(1024), allowedUrls }
    expect(JSON.stringify(body).length).toBeLessThan(limits.bodyBytes)
    const answer = await call(h.app, 'POST', '/tokens/v2/alice', sk, body)
    expect(answer.status).toBe(200)
    expect(answer.body.allowedUrls).toHaveLength(100)
  })

  it('refuses a body over the limit with 422 and creates nothing', async () => {
    const before = await call(h.app, 'GET', '/tokens/v2/alice', sk)
    const answer = await call(h.app, 'POST', '/tokens/v2/alice', sk, {
      note: 'x'.repeat(limits.bodyBytes),
    })
    expect(answer.status).toBe(422)
    expect(answer.body).toEqual({
      message: 'resources are invalid',
      details: 'Request body is too large',
    })
    const after = await call(h.app, 'GET', '/tokens/v2/alice', sk)
    expect(after.body).toHaveLength(before.body.length)
  })

  it('refuses JSON nested deeper than the bound before parsing it', async () => {
    const deep = `${'['.repeat(limits.jsonDepth + 1)}${']'.repeat(limits.jsonDepth + 1)}`
    const answer = await h.app.inject({
      method: 'POST',
      url: `/tokens/v2/alice?access_token=${sk}`,
      payload: `{"note":"n","scopes":${deep}}`,
      headers: { 'content-type': 'application/json' },
    })
    expect(answer.statusCode).toBe(422)
    expect(answer.json()).toEqual({
      message: 'resources are invalid',
      details: 'the body is nested too deeply',
    })
    const huge = '['.repeat(200_000)
    const hugeAnswer = await h.app.inject({
      method: 'PATCH',
      url: `/tokens/v2/alice/${h.alice.defaultToken.id}?access_token=${sk}`,
      payload: huge,
    })
    expect(hugeAnswer.statusCode).toBe(422)
  })
})

describe('jsonDepthExceeds', () => {
  it('counts brackets outside strings only', () => {
    expect(jsonDepthExceeds('{"a":[[1]]}', 3)).toBe(false)
    expect(jsonDepthExceeds('{"a":[[[1]]]}', 3)).toBe(true)
    expect(jsonDepthExceeds('{"a":"[[[[[[\\"[[[["}', 1)).toBe(false)
    expect(jsonDepthExceeds('[{}][{}][{}]', 2)).toBe(false)
  })
})

describe('closeSilentConnections', () => {
  // Silences of a second: the client's writes every 100 ms and the server's checks share this
  // process's event loop, and a loaded machine can stall it for a few hundred milliseconds.
  const silentMs = 1000
  const everyMs = 50
  const slackMs = 500
  // 1 MB a response: more than the kernel's buffers take for a client that does not read.
  const big = Buffer.alloc(1 << 20, 'x')
  const server = createServer((request, response) => {
    response.end(request.url === '/big' ? big : 'ok')
  })
  let port = 0
  beforeAll(async () => {
    closeSilentConnections(server, silentMs, everyMs)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  /**
   * Connects, writes `first`, and resolves with the ms until the server closed its side (-1 if
   * it had not within `within`): measured at the server, as a client that does not read never
   * learns of the close.
   */
  const closedAfter = (first: string, within: number, onOpen?: (socket: Socket) => void) =>
    new Promise<number>((resolve) => {
      const started = Date.now()
      const client = connect(port, '127.0.0.1')
      const done = (ms: number) => {
        clearTimeout(giveUp)
        client.destroy()
        resolve(ms)
      }
      const giveUp = setTimeout(() => done(-1), within)
      server.once('connection', (socket) => socket.on('close', () => done(Date.now() - started)))
      client.on('connect', () => {
        if (first !== '') client.write(first)
        onOpen?.(client)
      })
      client.on('error', () => {})
    })

  it('closes a connection that sends nothing after silentMs to silentMs + everyMs', async () => {
    const ms = await closedAfter('', 3_000)
    expect(ms).toBeGreaterThanOrEqual(silentMs)
    expect(ms).toBeLessThan(silentMs + everyMs + slackMs)
  })

  it('closes a client that asked for a large response and stopped reading it', async () => {
    const ms = await closedAfter('GET /big HTTP/1.1\r\nHost: x\r\n\r\n', 3_000, (socket) =>
      socket.pause(),
    )
    expect(ms).toBeGreaterThanOrEqual(silentMs)
    expect(ms).toBeLessThan(silentMs + everyMs + slackMs)
  })

  it('keeps a connection that carries a request every 100 ms', async () => {
    let timer: NodeJS.Timeout | undefined
    const ms = await closedAfter('', 2_500, (socket) => {
      socket.resume()
      timer = setInterval(() => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), 100)
    })
    clearInterval(timer)
    expect(ms).toBe(-1)
  })
})

describe('an overloaded process', () => {
  let shed: Harness
  beforeAll(async () => {
    shed = await harness({ SHED_DELAY_MS: '50' })
  })
  afterAll(() => shed.close())

  /** Keeps the event loop about 150 ms late for `ms`: sustained saturation, not one pause. */
  async function saturate(ms: number) {
    const end = Date.now() + ms
    while (Date.now() < end) {
      const busy = Date.now() + 150
      while (Date.now() < busy) {
        // spin
      }
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  it('sheds with 503 and Retry-After while the event loop is late; /healthz keeps answering', async () => {
    await saturate(1_200)
    const shedAnswer = await call(shed.app, 'GET', '/tokens/v2?access_token=x')
    expect(shedAnswer.status).toBe(503)
    expect(shedAnswer.headers['retry-after']).toBe('1')
    expect(shedAnswer.body).toEqual({
      message: 'Service Unavailable',
      details: 'the server is overloaded; retry in a second',
    })
    expect((await shed.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200)
    // A quiet window later, it answers again.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const calm = await call(shed.app, 'GET', '/tokens/v2?access_token=x')
    expect(calm.status).toBe(200)
  })
})
