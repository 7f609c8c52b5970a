import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connect, type TLSSocket } from 'node:tls'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { limits } from '../../src/http/limits.js'
import { dialectEnv } from '../dialect.js'
import { type Started, send, startTessera } from './spawned.js'

/**
 * Slow and oversized clients against a real server: slow headers and slow bodies are cut off
 * at the documented bounds while other clients are served; oversized requests get a 4xx in the
 * contract's `{"message"}` shape; memory stays bounded.
 */

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)
const storage = dialectEnv()
let server: Started
let sk = ''

const rssMb = () => {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))
  return Number(kb?.[1]) / 1024
}

beforeAll(async () => {
  server = await startTessera(mkdtempSync(path.join(tmpdir(), 'tessera-slow-')), storage.env)
  const cli = async (...args: string[]) =>
    JSON.parse(
      (
        await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], {
          env: server.env,
          cwd: server.env.DATA_DIR,
        })
      ).stdout,
    )
  await cli('account', 'create', 'patient')
  sk = (await cli('token', 'create', 'patient', '--scopes', 'tokens:write', '--note', 'test')).token
})
afterAll(async () => {
  server.child.kill('SIGTERM')
  await server.exited
  await storage.drop()
})

interface Raw {
  socket: TLSSocket
  /** Everything the server sent, once it closed the connection, and when (ms after open). */
  closed: Promise<{ text: string; afterMs: number }>
}

function open(): Promise<Raw> {
  const { port } = new URL(server.url)
  return new Promise((resolve, reject) => {
    const opened = performance.now()
    const socket = connect({ host: '127.0.0.1', port: Number(port), ca: server.ca }, () =>
      resolve({ socket, closed }),
    )
    let text = ''
    socket.on('data', (d) => {
      text += d
    })
    socket.on('error', () => {})
    const closed = new Promise<{ text: string; afterMs: number }>((done) =>
      socket.on('close', () => done({ text, afterMs: performance.now() - opened })),
    )
    socket.once('error', reject)
  })
}

/** Writes a little every 500 ms, as a slowloris client does, until the server closes. */
function dribble(raw: Raw, first: string, more: string) {
  raw.socket.write(first)
  const timer = setInterval(() => {
    if (raw.socket.writable) raw.socket.write(more)
  }, 500)
  void raw.closed.then(() => clearInterval(timer))
}

const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1])
const bodyOf = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4)

describe('slow clients', () => {
  it('are cut off while a normal client keeps being served fast', async () => {
    const before = rssMb()
    const slowHeaders = await Promise.all(Array.from({ length: 50 }, open))
    const slowBodies = await Promise.all(Array.from({ length: 20 }, open))
    for (const raw of slowHeaders)
      dribble(raw, 'GET /tokens/v2 HTTP/1.1\r\nHost: x\r\n', 'X-S: 1\r\n')
    const body = JSON.stringify({ note: 'slow' })
    for (const raw of slowBodies) {
      dribble(
        raw,
        `POST /tokens/v2/patient?access_token=${sk} HTTP/1.1\r\nHost: x\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length + 10_000}\r\n\r\n${body}`,
        ' ',
      )
    }

    // A normal client meanwhile: retrieves one after another for 6 seconds.
    const latencies: number[] = []
    const until = performance.now() + 6_000
    while (performance.now() < until) {
      const started = performance.now()
      const answer = await send(server, 'GET', `/tokens/v2?access_token=${sk}`)
      latencies.push(performance.now() - started)
      expect(answer.status).toBe(200)
    }
    latencies.sort((a, b) => a - b)
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? Number.POSITIVE_INFINITY

    const headerEnds = await Promise.all(slowHeaders.map((r) => r.closed))
    const bodyEnds = await Promise.all(slowBodies.map((r) => r.closed))
    const worst = (ends: { afterMs: number }[]) => Math.max(...ends.map((e) => e.afterMs))
    console.log(
      `slow clients: ${latencies.length} retrieves meanwhile, p99 ${p99.toFixed(1)} ms; ` +
        `50 slow-header connections closed by ${(worst(headerEnds) / 1000).toFixed(1)} s, ` +
        `20 slow-body by ${(worst(bodyEnds) / 1000).toFixed(1)} s; RSS ${before.toFixed(0)} -> ${rssMb().toFixed(0)} MB`,
    )
    expect(p99).toBeLessThan(1_000)
    for (const end of headerEnds) {
      expect(statusOf(end.text)).toBe(408)
      expect(JSON.parse(bodyOf(end.text))).toEqual({ message: 'Request Timeout' })
      expect(end.afterMs).toBeLessThan(limits.headersTimeoutMs + 2_000)
    }
    for (const end of bodyEnds) {
      expect(statusOf(end.text)).toBe(408)
      expect(end.afterMs).toBeLessThan(limits.requestTimeoutMs + 2_000)
    }
    expect(rssMb() - before).toBeLessThan(50)
  }, 40_000)

  it('a connection that never sends a byte is closed', async () => {
    const raw = await open()
    const end = await raw.closed
    expect(end.afterMs).toBeLessThan(limits.headersTimeoutMs + 2_000)
  }, 20_000)
})

describe('oversized requests', () => {
  const exchange = async (request: string) => {
    const raw = await open()
    raw.socket.write(request)
    return (await raw.closed).text
  }

  it.each([
    ['a URL', `GET /tokens/v2?access_token=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['a header', `GET /tokens/v2 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    [
      'many headers',
      `GET /tokens/v2 HTTP/1.1\r\nHost: x\r\n${'X-H: 123456789\r\n'.repeat(2_000)}\r\n`,
    ],
  ])('%s: 431 with a message, connection closed', async (_what, request) => {
    const text = await exchange(request)
    expect(statusOf(text)).toBe(431)
    expect(JSON.parse(bodyOf(text))).toEqual({ message: 'Request Header Fields Too Large' })
  })

  it('a request line that is not HTTP: 400 with a message', async () => {
    const text = await exchange('NOT HTTP AT ALL\r\n\r\n')
    expect(statusOf(text)).toBe(400)
    expect(JSON.parse(bodyOf(text))).toEqual({ message: 'Bad Request' })
  })

  it('a body over the limit: 422 resources are invalid, without reading it all', async () => {
    const declared = limits.bodyBytes + 1
    const text = await exchange(
      `POST /tokens/v2/patient?access_token=${sk} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"note":"`,
    )
    expect(statusOf(text)).toBe(422)
    expect(JSON.parse(bodyOf(text))).toEqual({
      message: 'resources are invalid',
      details: 'Request body is too large',
    })
  })
})
