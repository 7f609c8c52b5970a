import http from 'node:http'
import https from 'node:https'

/** How the verifier reaches Tessera: its base URL, an operator key and the CA to trust. */
export interface TransportOptions {
  url: string
  adminKey: string
  /** PEM certificate(s) to trust instead of Node's default CAs (Tessera's generated one). */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>
  timeoutMs: number
}

/** Tessera did not answer usefully (unreachable, timed out, a 5xx, a refused operator key). */
export class TesseraUnreachableError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message)
    this.name = 'TesseraUnreachableError'
  }
}

export class Transport {
  readonly base: URL
  private readonly lib: typeof https | typeof http
  private readonly agent: http.Agent
  private readonly authorization: string

  constructor(private readonly options: TransportOptions) {
    this.base = new URL(options.url)
    if (this.base.protocol !== 'https:' && this.base.protocol !== 'http:') {
      throw new TypeError(`url must be an https (or http) URL, not ${options.url}`)
    }
    this.lib = this.base.protocol === 'https:' ? https : http
    const agentOptions = { keepAlive: true, maxSockets: 32, ...this.tls() }
    this.agent =
      this.base.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions)
    this.authorization = `Bearer ${options.adminKey}`
  }

  /** A full URL for a path below the base (which may itself have a path prefix). */
  url(path: string): URL {
    const prefix = this.base.pathname.replace(/\/$/, '')
    return new URL(`${prefix}${path}`, this.base)
  }

  /** POSTs JSON and answers the parsed JSON of a 200; anything else throws. */
  postJson(path: string, body: unknown): Promise<unknown> {
    const payload = JSON.stringify(body)
    return new Promise((resolve, reject) => {
      const req = this.lib.request(
        this.url(path),
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            authorization: this.authorization,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            accept: 'application/json',
          },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('error', (err) => reject(new TesseraUnreachableError(err.message)))
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8')
            if (res.statusCode !== 200) {
              const what = res.statusCode === 401 ? ' (is the operator key right?)' : ''
              return reject(
                new TesseraUnreachableError(
                  `${path} answered ${res.statusCode}${what}`,
                  res.statusCode,
                ),
              )
            }
            try {
              resolve(JSON.parse(text))
            } catch {
              reject(new TesseraUnreachableError(`${path} answered a body that is not JSON`))
            }
          })
        },
      )
      req.setTimeout(this.options.timeoutMs, () =>
        req.destroy(new TesseraUnreachableError(`${path} timed out`)),
      )
      req.on('error', (err) =>
        reject(
          err instanceof TesseraUnreachableError ? err : new TesseraUnreachableError(err.message),
        ),
      )
      req.end(payload)
    })
  }

  /** Opens a long-lived GET (the event stream) on a connection of its own. */
  openStream(path: string, headers: Record<string, string>): http.ClientRequest {
    return this.lib.request(this.url(path), {
      method: 'GET',
      agent: false,
      ...this.tls(),
      headers: {
        authorization: this.authorization,
        accept: 'text/event-stream',
        'cache-control': 'no-cache',
        ...headers,
      },
    })
  }

  close(): void {
    this.agent.destroy()
  }

  private tls(): { ca?: string | Buffer | Array<string | Buffer> } {
    const { ca } = this.options
    if (ca === undefined) return {}
    return { ca: Array.isArray(ca) ? [...ca] : (ca as string | Buffer) }
  }
}
