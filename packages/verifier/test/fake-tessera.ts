import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A stand-in for Tessera's admin routes the verifier uses, over plain HTTP: introspection
 * answers from a table, an event stream the test feeds (resumable with Last-Event-ID), usage
 * reports recorded (each batch counted once), and credit leases granted from balances.
 */

export const fakeKey = 'fake-operator-key-0123456789abcdefghij'

export interface FakeEvent {
  seq: number
  action: string
  data: Record<string, unknown>
}

export interface FakeReport {
  reporter: string
  batch: string
  counts: Array<{
    minute: string
    account: string
    token: string
    outcomes: Record<string, number>
  }>
  returned: Array<{ account: string; token?: string; amount: number; lease: string }>
  /** Refused decisions, one row each: absent when there are none. */
  refused?: Array<Record<string, unknown>>
}

export interface FakeTessera {
  url: string
  /** Introspection request bodies, in order. */
  introspectBodies: Array<Record<string, unknown>>
  /** Every report received, retries included. */
  reports: FakeReport[]
  /** The reports counted: each (reporter, batch) once. */
  counted: FakeReport[]
  /** The next this many reports are counted but their answer is lost (the connection drops). */
  loseReportAnswers: number
  /** The next this many reports are refused for their content (422), not counted. */
  refuseReports: number
  /** Reports with refused rows are refused (422), as a Tessera before the verification log does. */
  refuseRows: boolean
  /** Delays before reports and leases are answered, ms. */
  reportDelayMs: number
  leaseDelayMs: number
  /** Tessera's clock less the verifier's, ms: a lease's `expires` is on Tessera's clock. */
  clockSkewMs: number
  /** Credit balances by `account` or `account/token`; a target absent carries no credits. */
  balances: Map<string, number>
  /** Lease requests, in order. */
  leaseRequests: Array<{ account: string; token?: string; want: number }>
  /** How long a lease lasts, ms. */
  leaseMs: number
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
  /**
   * `credits.changed` as Tessera sends it: the audit event src/usage/credits.ts writes (target
   * the token, or the account for its balance).
   */
  creditsChanged(account: string, tokenId?: string): FakeEvent
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
    introspectBodies: [],
    reports: [],
    counted: [],
    loseReportAnswers: 0,
    refuseReports: 0,
    refuseRows: false,
    reportDelayMs: 0,
    leaseDelayMs: 0,
    clockSkewMs: 0,
    balances: new Map(),
    leaseRequests: [],
    leaseMs: 60_000,
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
    creditsChanged(account, tokenId) {
      return fake.emit('credits.changed', {
        id: `evt${seq + 1}`,
        at: new Date().toISOString(),
        action: 'credits.changed',
        actor: { type: 'operator', id: 'ops' },
        target:
          tokenId === undefined ? { type: 'account', id: account } : { type: 'token', id: tokenId },
        account,
        details: { operation: 'set', remaining: 5, refill: null },
      })
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
    fake.introspectBodies.push(JSON.parse(body))
    if (fake.delayMs > 0) {
      await new Promise((r) => setTimeout(r, fake.delayMs))
      fake.onIntrospect?.(token)
    }
    const answer = fake.answers.get(token) ?? { active: false, code: 'TokenRevoked' }
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(answer))
  }

  const readJson = async (req: IncomingMessage) => {
    let body = ''
    for await (const chunk of req) body += chunk
    return JSON.parse(body)
  }
  const answerJson = (res: ServerResponse, value: unknown) => {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(value))
  }
  const targetOf = (t: { account: string; token?: string }) =>
    t.token === undefined ? t.account : `${t.account}/${t.token}`

  async function report(req: IncomingMessage, res: ServerResponse) {
    const r = (await readJson(req)) as FakeReport
    fake.reports.push(r)
    if (fake.reportDelayMs > 0) await new Promise((done) => setTimeout(done, fake.reportDelayMs))
    if (fake.refuseReports > 0 || (fake.refuseRows && r.refused !== undefined)) {
      if (fake.refuseReports > 0) fake.refuseReports--
      res.writeHead(422, { 'content-type': 'application/json' })
      return void res.end('{"message":"Unprocessable Entity","details":"resources are invalid"}')
    }
    const counted = !fake.counted.some((c) => c.reporter === r.reporter && c.batch === r.batch)
    if (counted) {
      fake.counted.push(r)
      for (const lease of r.returned) {
        const key = targetOf(lease)
        fake.balances.set(key, (fake.balances.get(key) ?? 0) + lease.amount)
      }
    }
    if (fake.loseReportAnswers > 0) {
      fake.loseReportAnswers--
      return void req.socket.destroy()
    }
    answerJson(res, { counted })
  }

  let leases = 0
  async function lease(req: IncomingMessage, res: ServerResponse) {
    const body = (await readJson(req)) as { account: string; token?: string; want: number }
    fake.leaseRequests.push(body)
    if (fake.leaseDelayMs > 0) await new Promise((done) => setTimeout(done, fake.leaseDelayMs))
    const balance = fake.balances.get(targetOf(body))
    if (balance === undefined) return answerJson(res, { granted: null })
    const granted = Math.min(balance, body.want)
    fake.balances.set(targetOf(body), balance - granted)
    if (granted === 0) return answerJson(res, { granted: 0 })
    const expires = new Date(Date.now() + fake.clockSkewMs + fake.leaseMs).toISOString()
    answerJson(res, { granted, lease: `lease-${++leases}`, expires, ttlMs: fake.leaseMs })
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
    if (req.method === 'POST' && req.url === '/admin/v1/usage/reports') {
      return void report(req, res)
    }
    if (req.method === 'POST' && req.url === '/admin/v1/credits/leases') return void lease(req, res)
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  fake.url = `http://127.0.0.1:${port}`
  return fake
}
