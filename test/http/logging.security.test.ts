import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { Env } from '../../src/config.js'
import { createLogger } from '../../src/http/logging.js'
import { learntRoutes, redactUrl, secretParam } from '../../src/http/redact.js'
import { all, type Harness, harness } from '../helpers.js'
import { pathSpellings, readable, tokenSpellings } from '../secrets.js'
import { adminEnv } from './admin-client.js'

let h: Harness | undefined
let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  await h?.close()
  app = undefined
  h = undefined
})

async function tracing(env: Env = {}) {
  h = await harness(env)
  const lines: string[] = []
  const destination: DestinationStream = { write: (line: string) => lines.push(line) }
  app = buildApp(h.ctx, { logger: createLogger('trace', destination) })
  return { h, app, lines, output: () => lines.join('') }
}

/**
 * Every option that adds routes: sign-up, single sign-on (a provider that is not there: its
 * routes are declared all the same), the admin API.
 */
const everyRoute: Env = {
  ...adminEnv,
  DASHBOARD_SIGNUP: 'open',
  OIDC_ISSUER: 'https://127.0.0.1:9',
  OIDC_CLIENT_ID: 'tessera',
  OIDC_CLIENT_SECRET: 'a-client-secret-for-the-test-only',
}

/**
 * A parameter named like something secret. Such a parameter must be `:secret`, which the log
 * redacts, unless it is listed here with the reason it is not a secret.
 */
const looksSecret = /secret|token|code|key|link|pass|invit|portal|setup|nonce|otp|state/i
const notSecrets: Record<string, string> = {
  token_id: "a token's id: public, it names the token in every answer and in the audit log",
}

const paramsOf = (route: string) =>
  [...route.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string)
/** A secret as the service makes them: 43 characters of base64url. */
const newSecret = () => randomBytes(32).toString('base64url')

/** Sends raw bytes to the server and waits for it to close the connection. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    let answer = ''
    // Not half-closed: Node aborts a request still in flight when its client sends FIN (on
    // PostgreSQL the validation is still waiting for the database then).
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes))
    socket.on('data', (d) => {
      answer += d
    })
    socket.on('close', () => resolve(answer))
    // The server may reset a connection whose bytes it stopped reading: the answer so far.
    socket.on('error', () => resolve(answer))
  })
}

describe('logs at trace', () => {
  it('never hold the token, under every spelling the server accepts', async () => {
    const t = await tracing()
    const sk = await t.h.token('alice', all)
    for (const query of tokenSpellings(sk.token)) {
      const res = await t.app.inject({ method: 'GET', url: `/tokens/v2?${query}` })
      // Accepted as the token: the spelling matters.
      expect(res.json().code, query).toBe('TokenValid')
    }
    const requests = t.lines.filter((l) => l.includes('"incoming request"'))
    expect(requests).toHaveLength(tokenSpellings(sk.token).length)
    for (const line of requests) expect(line).toContain('=[redacted]')
    const [, , signature] = sk.token.split('.')
    expect(readable(t.output())).not.toContain(sk.token)
    expect(readable(t.output())).not.toContain(signature)
  })

  it('keep the token out of what a refused request leaves, its raw packet included', async () => {
    const t = await tracing()
    const sk = await t.h.token('alice', all)
    // The parser's errors, as Node gives them to the client-error handler.
    const refused: Error[] = []
    t.app.server.on('clientError', (err: Error) => refused.push(err))
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    const address = t.app.server.address()
    const port = typeof address === 'object' && address !== null ? address.port : 0
    const line = `GET /tokens/v2?access_token=${sk.token} HTTP/1.1\r\nHost: x\r\n`
    expect(await raw(port, `${line}Bad header\r\n\r\n`)).toMatch(/^HTTP\/1.1 400/)
    // A reset may come first (the server stops reading): what is logged is what is tested.
    const overflow = await raw(port, `${line}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    expect(overflow === '' || overflow.startsWith('HTTP/1.1 431'), overflow).toBe(true)
    // The router takes the query from after a `#` as well: the server accepts this token.
    const hashed = await raw(
      port,
      `GET /tokens/v2#access_token=${sk.token} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    )
    expect(hashed).toContain('"code":"TokenValid"')
    expect(t.output()).toContain('"url":"/tokens/v2#access_token=[redacted]"')

    // Each error holds the request's raw bytes; logged as Fastify's own handler logs it (at
    // trace), no line may carry them.
    expect(refused.map((err) => (err as { code?: string }).code)).toEqual([
      'HPE_INVALID_HEADER_TOKEN',
      'HPE_HEADER_OVERFLOW',
    ])
    for (const err of refused) {
      expect(String((err as { rawPacket?: Buffer }).rawPacket)).toContain(sk.token)
      t.app.log.trace({ err }, 'client error')
    }
    const errors = t.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'client error')
    expect(errors).toHaveLength(2)
    for (const error of errors) {
      expect(error.err.code).toMatch(/^HPE_/)
      expect(error.err.rawPacket).toBeUndefined()
    }
    expect(readable(t.output())).not.toContain(sk.token)
    expect(readable(t.output())).not.toContain(sk.token.split('.')[2])
  })

  it('redact request targets inside messages and errors, in child loggers too', async () => {
    const t = await tracing()
    const sk = await t.h.token('alice', all)
    t.app.get('/twice', (request, reply) => {
      request.log.info(`Route GET:${request.url} not found`)
      reply.send('once')
      reply.send('twice') // Fastify warns, with the raw URL in its error's message
    })
    await t.app.ready()
    await t.app.inject({ method: 'GET', url: `/twice?access%5Ftoken=${sk.token}` })
    t.app.log.error(new Error(`failed at /account/setup/${'s'.repeat(43)}`))
    t.app.log.warn({ err: `/tokens/v2?access_token=${sk.token}` }, 'a message as err')
    const lines = t.lines.map((l) => JSON.parse(l))
    expect(lines.find((l) => l.msg?.startsWith('Route GET:'))?.msg).toBe(
      'Route GET:/twice?access%5Ftoken=[redacted] not found',
    )
    const sent = lines.find((l) => l.err?.code === 'FST_ERR_REP_ALREADY_SENT')
    expect(sent.err.message).toContain('/twice?access%5Ftoken=[redacted]')
    // Given no message, pino writes the error's own as the line's.
    expect(sent.msg).toContain('/twice?access%5Ftoken=[redacted]')
    expect(lines.find((l) => l.err?.message?.startsWith('failed at'))?.err.message).toBe(
      'failed at /account/setup/[redacted]',
    )
    expect(readable(t.output())).not.toContain(sk.token)
    expect(t.output()).not.toContain('s'.repeat(43))
  })
})

describe('the route table', () => {
  it('declares every secret of a path as :secret, and the log redacts each such route', {
    timeout: 60_000,
  }, async () => {
    const t = await tracing(everyRoute)
    const reached: string[] = []
    t.app.addHook('onResponse', async (request) => {
      reached.push(request.routeOptions.url ?? '')
    })
    await t.app.ready()
    const routes = learntRoutes()
    // The whole table: the token API, the admin API, the dashboard with its options.
    for (const route of [
      '/tokens/v2',
      '/admin/v1/introspect',
      '/admin/v1/accounts/:username/portal-links',
      '/account/sso/callback',
      '/account/sign-up',
      '/account/passkeys/signin',
    ]) {
      expect(routes).toContain(route)
    }
    for (const route of routes) {
      for (const name of paramsOf(route)) {
        if (name === secretParam || !looksSecret.test(name) || notSecrets[name] !== undefined) {
          continue
        }
        expect.fail(`${route}: :${name} looks like a secret; name it :${secretParam}`)
      }
    }
    // Each route with a `:secret` is walked below, these three and any added later.
    const secretRoutes = routes.filter((r) => paramsOf(r).includes(secretParam))
    expect(secretRoutes).toEqual(
      expect.arrayContaining([
        '/account/invitations/:secret',
        '/account/portal/:secret',
        '/account/setup/:secret',
      ]),
    )

    const secrets: string[] = []
    let requests = 0
    for (const route of secretRoutes) {
      const at = route.indexOf(`:${secretParam}`)
      const prefix = route.slice(0, at).replace(/:[A-Za-z0-9_]+/g, 'x')
      const method = t.app.hasRoute({ method: 'GET', url: route }) ? 'GET' : 'POST'
      // Under every spelling the router takes; and as where to go after signing in.
      const [inPath, inNext] = [newSecret(), newSecret()]
      secrets.push(inPath, inNext)
      for (const url of [
        ...pathSpellings(prefix, inPath),
        ...pathSpellings(prefix, inNext).map(
          (url) => `/account/sign-in?next=${encodeURIComponent(url)}`,
        ),
      ]) {
        reached.length = 0
        const res = await t.app.inject({ method, url })
        requests++
        // The route itself answered (a link never issued: 404 or 410 from its handler).
        expect(reached, url).toEqual([
          url.startsWith('/account/sign-in') ? '/account/sign-in' : route,
        ])
        expect(res.statusCode, url).toBeLessThan(500)
      }
    }
    // The single sign-on callback carries a one-time code and the flow's state.
    const code = newSecret()
    const state = newSecret()
    secrets.push(code, state)
    await t.app.inject({ method: 'GET', url: `/account/sso/callback?code=${code}&state=${state}` })
    requests++

    const output = readable(t.output())
    for (const secret of secrets) expect(output).not.toContain(secret)
    const urls = t.lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'incoming request')
      .map((l) => l.req.url as string)
    expect(urls).toHaveLength(requests)
    for (const url of urls) expect(url).toContain('[redacted]')
    expect(urls).toContain('/account/portal/[redacted]')
    expect(urls).toContain('/account/invitations/[redacted]?x=1')
    expect(urls).toContain('//account//setup//[redacted]')
    expect(urls).toContain('/account/sign-in?next=[redacted]')
    expect(urls).toContain('/account/sso/callback?code=[redacted]&state=[redacted]')
  })

  it('has every documented query parameter that looks secret redacted by name', async () => {
    const t = await tracing(everyRoute)
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const names = new Set<string>()
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const operation of Object.values(operations as Record<string, unknown>)) {
        const parameters = (operation as { parameters?: { in: string; name: string }[] }).parameters
        for (const p of parameters ?? []) {
          if (p.in !== 'query') continue
          names.add(p.name)
          const value = newSecret()
          const redacted = redactUrl(`${path}?${p.name}=${value}`)
          if (looksSecret.test(p.name)) expect(redacted, `${path} ${p.name}`).not.toContain(value)
        }
      }
    }
    expect(names).toContain('access_token')
    expect(names).toContain('limit')
  })
})

describe('log lines', () => {
  it("hold no secret path in any text field, nested or of an error, and leave the caller's objects alone", async () => {
    const t = await tracing()
    await t.app.ready()
    const secret = newSecret()
    const where = `/account/portal/${secret}`
    const fields = { reason: `fetch ${where} failed`, nested: { url: where, list: [where, 1] } }
    t.app.log.info(fields, 'a line with fields')
    const err = Object.assign(new Error('failed'), { url: `https://tessera.test${where}` })
    t.app.log.error({ err }, 'an error with a field')
    t.app.log.warn({ err: { url: where } }, 'an object as err')
    expect(fields.nested.url).toBe(where)
    expect(err.url).toBe(`https://tessera.test${where}`)
    const lines = t.lines.map((l) => JSON.parse(l))
    expect(lines.find((l) => l.msg === 'a line with fields')).toMatchObject({
      reason: 'fetch /account/portal/[redacted] failed',
      nested: { url: '/account/portal/[redacted]', list: ['/account/portal/[redacted]', 1] },
    })
    expect(lines.find((l) => l.msg === 'an error with a field')?.err.url).toBe(
      'https://tessera.test/account/portal/[redacted]',
    )
    expect(lines.find((l) => l.msg === 'an object as err')?.err.url).toBe(
      '/account/portal/[redacted]',
    )
    expect(readable(t.output())).not.toContain(secret)
  })
})
