import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { generateSelfSigned } from '../../src/tls/self-signed.js'

/** One request a receiver got. */
export interface Received {
  path: string
  headers: Record<string, string | string[] | undefined>
  body: string
  // biome-ignore lint/suspicious/noExplicitAny: the events are read as plain JSON
  event: any
  /** What it was answered: an HTTP status, or no answer at all. */
  answer: number | 'hang'
}

/**
 * A real HTTPS webhook receiver on 127.0.0.1 with a self-signed certificate, which the
 * dispatcher trusts through WEBHOOK_CA_FILE (`caFile`). `respond` decides each answer.
 */
export class Receiver {
  readonly received: Received[] = []
  respond: (r: Omit<Received, 'answer'>) => number | 'hang' = () => 200
  private readonly dir: string
  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly caFile: string,
    dir: string,
  ) {
    this.dir = dir
  }

  static async start(): Promise<Receiver> {
    const { cert, key } = generateSelfSigned()
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-receiver-'))
    const caFile = path.join(dir, 'ca.pem')
    writeFileSync(caFile, cert)
    let receiver: Receiver | undefined
    const server = createServer({ cert, key }, (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        const got = { path: req.url ?? '', headers: req.headers, body, event: JSON.parse(body) }
        const answer = receiver?.respond(got) ?? 500
        receiver?.received.push({ ...got, answer })
        if (answer !== 'hang') res.writeHead(answer).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    receiver = new Receiver(server, (server.address() as AddressInfo).port, caFile, dir)
    return receiver
  }

  url(pathname = '/hook') {
    return `https://127.0.0.1:${this.port}${pathname}`
  }

  /** The requests answered 2xx, in the order they came. */
  get accepted(): Received[] {
    return this.received.filter((r) => typeof r.answer === 'number' && r.answer < 300)
  }

  /** Stops listening: connections are refused until `up`. */
  async down(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  async up(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve))
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.down()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Polls `check` until it holds (or throws what it last threw after `ms`). */
export async function waitFor<T>(
  check: () => T | false | undefined | Promise<T | false | undefined>,
  ms = 8000,
): Promise<T> {
  const until = performance.now() + ms
  for (;;) {
    try {
      const value = await check()
      if (value !== false && value !== undefined) return value
      if (performance.now() > until) throw new Error('timed out waiting')
    } catch (err) {
      if (performance.now() > until) throw err
    }
    await new Promise((r) => setTimeout(r, 25))
  }
}
