import { readFileSync } from 'node:fs'
import { request } from 'node:https'
import { connect } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ServerProcess, startServer } from './server.js'

/**
 * The headers the independent tools grade, over a real TLS socket to the built server: HSTS on
 * every answer (Mozilla's HTTP Observatory), `nosniff`, the admin API's RFC 6750 challenge and
 * no CORS there, the token API's CORS, and the retrieve answered ahead of Fastify carrying
 * exactly what Fastify's answer carries.
 */

const key = 'op-headers-0123456789abcdefghijklmnopqrstuvwxyz'
const hsts = 'max-age=63072000'

interface Raw {
  status: number
  /** Lowercase names in the order sent, with their values. */
  headers: [string, string][]
  body: string
}

function call(
  server: ServerProcess,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      { method, headers, ca: readFileSync(server.certFile), agent: false },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => {
          const pairs: [string, string][] = []
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            pairs.push([(res.rawHeaders[i] as string).toLowerCase(), res.rawHeaders[i + 1] ?? ''])
          }
          resolve({ status: res.statusCode ?? 0, headers: pairs, body: text })
        })
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

const header = (answer: Raw, name: string) =>
  answer.headers.filter(([n]) => n === name).map(([, value]) => value)

/** What Node adds on the socket, and the one header whose value moves with every request. */
const app = (answer: Raw) =>
  answer.headers
    .filter(([name]) => !['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(name))
    .map(([name, value]) => [name, name === 'ratelimit' ? value.replace(/;r=\d+/, '') : value])

describe('the headers over HTTPS', () => {
  let server: ServerProcess
  let pk: string
  const operator = { authorization: `Bearer ${key}` }
  beforeAll(async () => {
    server = await startServer({ ADMIN_KEYS: `ops:${key}` })
    const made = await call(
      server,
      'POST',
      '/admin/v1/accounts',
      { ...operator, 'content-type': 'application/json' },
      JSON.stringify({ username: 'headers' }),
    )
    expect(made.status).toBe(201)
    pk = JSON.parse(made.body).defaultToken.token
  })
  afterAll(() => server.stop())

  it('sends HSTS once and nosniff on every answer: token API, admin API, pages, errors', async () => {
    const answers: [string, string, Record<string, string>, number][] = [
      ['GET', `/tokens/v2?access_token=${pk}`, {}, 200],
      ['GET', '/tokens/v2?access_token=not-a-token', {}, 200],
      ['GET', '/tokens/v2/headers', {}, 401],
      ['GET', '/no-such-path', {}, 404],
      ['GET', '/openapi.json', {}, 200],
      ['GET', '/admin/v1/accounts/headers', operator, 200],
      ['GET', '/admin/v1/accounts/headers', {}, 401],
      ['GET', '/account/sign-in', {}, 200],
      ['GET', '/docs', {}, 200],
      ['GET', '/', {}, 302],
    ]
    for (const [method, path, headers, status] of answers) {
      const answer = await call(server, method, path, headers)
      expect([path, answer.status, header(answer, 'strict-transport-security')]).toEqual([
        path,
        status,
        [hsts],
      ])
      expect([path, header(answer, 'x-content-type-options')]).toEqual([path, ['nosniff']])
    }
  })

  it("answers a retrieve ahead of Fastify with exactly the headers of Fastify's answer", async () => {
    const url = `/tokens/v2?access_token=${pk}`
    const fast = await call(server, 'GET', url)
    // A chunked (empty) body is never taken ahead of Fastify.
    const fastify = await call(server, 'GET', url, { 'transfer-encoding': 'chunked' }, '')
    expect(app(fast)).toEqual(app(fastify))
    expect(app(fast).map(([name]) => name)).toEqual([
      'access-control-allow-origin',
      'access-control-expose-headers',
      'x-content-type-options',
      'strict-transport-security',
      'x-rate-limit-interval',
      'x-rate-limit-limit',
      'x-rate-limit-reset',
      'ratelimit-policy',
      'ratelimit',
      'content-type',
      'content-length',
    ])
    expect(fast.body).toBe(fastify.body)
  })

  it('sends them on the event stream, and on a request Node could not parse', async () => {
    const stream = await call(server, 'HEAD', '/admin/v1/events', operator)
    expect([
      stream.status,
      header(stream, 'strict-transport-security'),
      header(stream, 'x-content-type-options'),
      header(stream, 'access-control-allow-origin'),
    ]).toEqual([200, [hsts], ['nosniff'], []])
    const { hostname, port } = new URL(server.url)
    const malformed = await new Promise<string>((resolve, reject) => {
      const socket = connect({
        host: hostname,
        port: Number(port),
        ca: readFileSync(server.certFile),
      })
      let read = ''
      socket.setEncoding('utf8')
      socket.on('secureConnect', () =>
        socket.write('GET / HTTP/1.1\r\nHost: x\r\nBad header\r\n\r\n'),
      )
      socket.on('data', (d) => {
        read += d
      })
      socket.on('error', reject)
      socket.on('close', () => resolve(read))
    })
    expect(malformed).toMatch(/^HTTP\/1.1 400 Bad Request\r\n/)
    expect(malformed).toContain('\r\nX-Content-Type-Options: nosniff\r\n')
    expect(malformed).toContain(`\r\nStrict-Transport-Security: ${hsts}\r\n`)
  })

  it('challenges a refused operator key with error="invalid_token", and a missing one without', async () => {
    const none = await call(server, 'GET', '/admin/v1/accounts')
    expect([none.status, header(none, 'www-authenticate')]).toEqual([401, ['Bearer realm="admin"']])
    const wrong = await call(server, 'GET', '/admin/v1/accounts', { authorization: 'Bearer nope' })
    expect([wrong.status, header(wrong, 'www-authenticate')]).toEqual([
      401,
      ['Bearer realm="admin", error="invalid_token"'],
    ])
  })

  it('gives the admin API no CORS, and the token API its own', async () => {
    const origin = { origin: 'https://app.example.com' }
    const preflight = { ...origin, 'access-control-request-method': 'GET' }
    const cors = (answer: Raw) => answer.headers.filter(([name]) => name.startsWith('access-'))
    const admin = [
      await call(server, 'GET', '/admin/v1/accounts', { ...origin, ...operator }),
      await call(server, 'GET', '/admin/v1/accounts', origin),
      await call(server, 'OPTIONS', '/admin/v1/accounts', preflight),
    ]
    expect(admin.map((answer) => [answer.status, cors(answer)])).toEqual([
      [200, []],
      [401, []],
      [204, []],
    ])
    const token = await call(server, 'GET', `/tokens/v2?access_token=${pk}`, origin)
    expect(header(token, 'access-control-allow-origin')).toEqual(['*'])
    const tokenPreflight = await call(server, 'OPTIONS', '/tokens/v2/headers', preflight)
    expect([tokenPreflight.status, header(tokenPreflight, 'access-control-allow-origin')]).toEqual([
      204,
      ['*'],
    ])
  })
})
