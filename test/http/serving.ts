import { request } from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { expect, vi } from 'vitest'
import { buildApp } from '../../src/app.js'
import { cliActor } from '../../src/audit/events.js'
import type { Env } from '../../src/config.js'
import { postgresChanges, sqliteChanges } from '../../src/db/changes.js'
import { createLogger } from '../../src/http/logging.js'
import { randomAlnum } from '../../src/ids.js'
import { RedisRateLimiter } from '../../src/ratelimit/redis.js'
import { type Harness, harness } from '../helpers.js'

/**
 * An app listening on a port, for the tests of the fast paths (src/http/ahead/):
 * every answer of a fast path is held against Fastify's own for the same
 * request. `app.inject` calls Fastify's handler directly, a request over the socket meets the
 * fast paths first. Redis is used for the rate limit when TEST_REDIS_URL is given (its answers
 * may then come after a round trip).
 */
const redisEnv = (): Env =>
  process.env.TEST_REDIS_URL
    ? { REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: `tessera-test-${randomAlnum(8)}:` }
    : {}

/**
 * Headers Node adds on the socket and light-my-request does not (or differently); a
 * `connection: close` is the app's own (Fastify's after a body its parser refused), and kept.
 */
const transport = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding'])
const kept = (name: string, value: string) =>
  !transport.has(name) || (name === 'connection' && value.toLowerCase() === 'close')

/**
 * The IETF `RateLimit` header says what is left, which one request more changes by one: an
 * answer keeps its form (`"<name>";r=n;t=<s>`), so that the fast path and the route, asked one
 * after the other, answer alike. Tests of what is left read the header themselves.
 */
const comparable = (name: string, value: string) =>
  name === 'ratelimit' ? value.replace(/;r=\d+/, ';r=n') : value

export interface Answer {
  status: number
  headers: [string, string][]
  body: string
}

type Method = 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'DELETE'

/** The headers of an API answer, in Fastify's order (Node's own taken out: `transport`). */
export const answerHeaders = [
  'access-control-allow-origin',
  'access-control-expose-headers',
  'x-content-type-options',
  'x-rate-limit-interval',
  'x-rate-limit-limit',
  'x-rate-limit-reset',
  'ratelimit-policy',
  'ratelimit',
  'content-type',
  'content-length',
]

/** The token's uses counted by the hour so far (each validation of it counts one). */
export async function usageCounts(h: Harness, tokenId: string): Promise<number[]> {
  await h.ctx.usage.flush()
  const { hours } = await h.ctx.usage.activity(tokenId)
  return hours.map((hour) => hour.count)
}

let open: { h: Harness; app: FastifyInstance } | undefined

/** Closes the app and harness of the last `serving` (each test file calls it after each test). */
export async function closeServing() {
  const last = open
  open = undefined
  await last?.app.close()
  await last?.h.close()
}

/**
 * A harness and an app of its own listening on a port, with an onRequest hook that records
 * what reached Fastify, and its log lines at `logLevel`.
 */
export async function serving(env: Env, logLevel = 'info') {
  const h = await harness({ METRICS_PORT: '0', ...redisEnv(), ...env })
  const limiter = h.ctx.rateLimiter
  if (limiter instanceof RedisRateLimiter) {
    await vi.waitFor(() => expect(limiter.shared).toBe(true), { timeout: 10_000 })
  }
  // Accounts of names no other run uses: every harness makes an alice and a bob, and the change
  // feed's channel is per database, so a notice of another run's alice (test files run in
  // parallel) would empty this one's directory entry mid-test.
  h.alice = await h.ctx.accounts.create(`fp${randomAlnum(10)}`, undefined, [], cliActor)
  h.bob = await h.ctx.accounts.create(`fp${randomAlnum(10)}`, undefined, [], cliActor)
  await caughtUp(h)
  const lines: string[] = []
  const app = buildApp(h.ctx, {
    logger: createLogger(logLevel, { write: (l: string) => lines.push(l) }),
  })
  open = { h, app }
  const fastify: string[] = []
  app.addHook('onRequest', (request, _reply, done) => {
    fastify.push(`${request.method} ${request.url}`)
    done()
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const json = (body: string | undefined) =>
    body === undefined ? {} : { 'content-type': 'application/json' }
  return {
    h,
    app,
    lines,
    /** What reached Fastify's hooks, as `METHOD url`. */
    fastify,
    /** Over the socket: the fast paths first. A body goes as JSON, with its Content-Length. */
    socket: (
      url: string,
      method: Method = 'GET',
      headers: Record<string, string> = {},
      body?: string,
    ) =>
      new Promise<Answer>((resolve, reject) => {
        const options = { host: '127.0.0.1', port, path: url, method }
        const req = request({ ...options, headers: { ...json(body), ...headers } }, (res) => {
          let read = ''
          res.setEncoding('utf8')
          res.on('data', (d) => {
            read += d
          })
          res.on('end', () => {
            const pairs: [string, string][] = []
            for (let i = 0; i < res.rawHeaders.length; i += 2) {
              const name = (res.rawHeaders[i] as string).toLowerCase()
              const value = res.rawHeaders[i + 1] as string
              if (kept(name, value)) pairs.push([name, comparable(name, value)])
            }
            resolve({ status: res.statusCode as number, headers: pairs, body: read })
          })
        })
        req.on('error', reject)
        req.end(body)
      }),
    /** Raw bytes over one connection; everything read once `answers` have come, or it closed. */
    raw: (bytes: string, answers: number) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port }, () => socket.write(bytes))
        let read = ''
        socket.setEncoding('utf8')
        socket.on('data', (d) => {
          read += d
          if (read.split('HTTP/1.1 ').length - 1 === answers && read.endsWith('}')) {
            socket.end()
            resolve(read)
          }
        })
        // Node 24 resets a connection it refused (431) once its answer is out: what was read
        // before the reset stands.
        socket.on('error', (error) => (read === '' ? reject(error) : resolve(read)))
        socket.on('close', () => resolve(read))
      }),
    /** Fastify alone. */
    inject: async (
      url: string,
      method: Method = 'GET',
      headers: Record<string, string> = {},
      body?: string,
    ): Promise<Answer> => {
      const res = await app.inject({
        method,
        url,
        headers: { ...json(body), ...headers },
        ...(body === undefined ? {} : { payload: body }),
      })
      const pairs = Object.entries(res.headers)
        .filter(([name, value]) => kept(name, String(value)))
        .map(([name, value]) => [name, comparable(name, String(value))] as [string, string])
      return { status: res.statusCode, headers: pairs, body: res.body }
    },
  }
}

/**
 * Waits until the caches keep records, and every change notified so far has reached them. Till
 * the change feed is live nothing is cached (PostgreSQL: it connects and LISTENs after start),
 * and a late notice of the harness's own writes (its accounts) empties an entry:
 * either way a request a test expects on a fast path would go to Fastify. The feed keeps
 * order, so once a notice of our own is in, every earlier one is.
 */
export async function caughtUp(h: Harness) {
  await vi.waitFor(() => expect(h.ctx.feedLive).toBe(true), { timeout: 10_000 })
  const { db, config, log } = h.ctx
  const changes =
    config.db.kind === 'postgres' ? postgresChanges(config.db, log) : sqliteChanges(db, log)
  const seen = vi.spyOn(h.ctx.tokens.directory, 'invalidate')
  const probe = `probe-${randomAlnum(8)}`
  await changes.notify(db, `account:${probe}`)
  await vi.waitFor(() => expect(seen).toHaveBeenCalledWith(probe), { timeout: 5_000 })
  seen.mockRestore()
}
