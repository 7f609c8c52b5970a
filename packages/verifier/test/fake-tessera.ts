import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A stand-in for Tessera's two admin routes the verifier uses, over plain HTTP: introspection
 * answers from a table, and an event stream the test feeds, resumable with Last-Event-ID.
 */

export const fakeKey = 'fake-operator-key-0123456789abcdefghij'

export interface FakeEvent {
  seq: number
  action: string
  data: Record<string, unknown>
}

export interface FakeTessera {
  url: string
  /** Introspection answers by token string; absent tokens are TokenRevoked. */
  answers: Map<string, Record<string, unknown>>
  introspections: string[]
  /** Last-Event-ID (or '') of each stream connection, in order. */
  streamRequests: string[]
  /** Delay before introspection answers, ms. */
  delayMs: number
  /** Delay before the event stream answers, ms. */
  streamDelayMs: number
  /** Called while an introspection is delayed, before it answers. */
  onIntrospect?: (token: string) => void
  /** Events older than this seq are no longer retained (a resume before it gets `reset`). */
  retainedFrom: number
  emit(action: string, data: Record<string, unknown>): FakeEvent
  /** Ends every open stream (the connection closes cleanly). */
  dropStreams(): void
  /** Stops answering: closes the listener and every connection. */
  stop(): Promise<void>
  /** Listens again on the same port. */
  restart(): Promise<void>
}

export const tokenOf = (usage: 'pk' | 'sk' | 'tk', payload: Record<string, unknown>, n = 0) =>
  `${usage}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.sig${n}`

export const active = (fields: Record<string, unknown>) => ({
  active: true,
  token_type: 'Bearer',
  client_id: 'api',
  iat: Math.floor(Date.now() / 1000),
  code: 'TokenValid',
  ...fields,
})

export async function startFakeTessera(): Promise<FakeTessera> {
  const events: FakeEvent[] = []
  const streams = new Set<ServerResponse>()
  let seq = 0

  const send = (res: ServerResponse, e: FakeEvent) =>
    res.write(`id: ${e.seq}\nevent: ${e.action}\ndata: ${JSON.stringify(e.data)}\n\n`)

  const fake: FakeTessera = {
    url: '',
    answers: new Map(),
    introspections: [],
    streamRequests: [],
    delayMs: 0,
    streamDelayMs: 0,
    retainedFrom: 1,
    emit(action, data) {
      const e = { seq: ++seq, action, data }
      events.push(e)
      for (const res of streams) send(res, e)
      return e
    },
    dropStreams() {
      for (const res of streams) res.end()
      streams.clear()
    },
    async stop() {
      fake.dropStreams()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
    async restart() {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    },
  }

  async function introspect(req: IncomingMessage, res: ServerResponse) {
    let body = ''
    for await (const chunk of req) body += chunk
    const { token } = JSON.parse(body) as { token: string }
    fake.introspections.push(token)
    if (fake.delayMs > 0) {
      await new Promise((r) => setTimeout(r, fake.delayMs))
      fake.onIntrospect?.(token)
    }
    const answer = fake.answers.get(token) ?? { active: false, code: 'TokenRevoked' }
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(answer))
  }

  async function stream(req: IncomingMessage, res: ServerResponse) {
    if (fake.streamDelayMs > 0) await new Promise((r) => setTimeout(r, fake.streamDelayMs))
    const last = String(req.headers['last-event-id'] ?? '')
    fake.streamRequests.push(last)
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    res.write('retry: 50\n\n')
    if (last !== '') {
      if (Number(last) < fake.retainedFrom - 1) res.write('event: reset\ndata: {}\n\n')
      for (const e of events) if (e.seq > Number(last)) send(res, e)
    }
    streams.add(res)
    res.on('close', () => streams.delete(res))
  }

  const server = createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${fakeKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' })
      return res.end('{"message":"Unauthorized"}')
    }
    if (req.method === 'POST' && req.url === '/admin/v1/introspect')
      return void introspect(req, res)
    if (req.method === 'GET' && req.url === '/admin/v1/events') return void stream(req, res)
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  fake.url = `http://127.0.0.1:${port}`
  return fake
}
