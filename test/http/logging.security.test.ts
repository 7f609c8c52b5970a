import { connect } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { createLogger } from '../../src/http/logging.js'
import { all, type Harness, harness } from '../helpers.js'
import { readable, tokenSpellings } from '../secrets.js'

let h: Harness | undefined
let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  await h?.close()
  app = undefined
  h = undefined
})

async function tracing() {
  h = await harness()
  const lines: string[] = []
  const destination: DestinationStream = { write: (line: string) => lines.push(line) }
  app = buildApp(h.ctx, { logger: createLogger('trace', destination) })
  return { h, app, lines, output: () => lines.join('') }
}

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
