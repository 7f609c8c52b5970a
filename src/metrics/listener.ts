import { createServer } from 'node:http'
import { ConfigError } from '../config.js'

/** What the listener serves: a prom-client registry, or the primary's aggregate of its workers'. */
export interface MetricsSource {
  metrics(): Promise<string>
  readonly contentType: string
}

export interface MetricsListener {
  url: string
  close(): Promise<void>
}

const firstLine = (err: unknown) => String((err as Error).message ?? err).split('\n')[0]

/**
 * The Prometheus listener: plain HTTP, apart from the API (its own port, 127.0.0.1 unless
 * METRICS_HOST says otherwise), answering GET /metrics and nothing else.
 */
export async function listenMetrics(
  source: MetricsSource,
  { host, port }: { host: string; port: number },
): Promise<MetricsListener> {
  const server = createServer((request, response) => {
    const path = request.url?.split('?', 1)[0]
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not Found\n')
      return
    }
    source.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': source.contentType }).end(text)
      },
      (err) => {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
        response.end(`${firstLine(err)}\n`)
      },
    )
  })
  server.headersTimeout = 10_000
  server.requestTimeout = 10_000
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'EADDRINUSE') {
      throw new ConfigError(`METRICS_PORT ${port} is already in use on ${host}`)
    }
    if (code?.startsWith('E')) {
      throw new ConfigError(
        `cannot listen on METRICS_HOST ${host} METRICS_PORT ${port}: ${firstLine(err)}`,
      )
    }
    throw err
  }
  const address = server.address()
  const bound = typeof address === 'object' && address !== null ? address.port : port
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    // Prometheus keeps its connection open between scrapes: closing waits for none of them.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
