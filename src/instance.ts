import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { createSecureContext } from 'node:tls'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { buildApp } from './app.js'
import { type Config, ConfigError, systemReason } from './config.js'
import { type AppContext, createContext, type Overrides } from './context.js'
import { createLogger } from './http/logging.js'
import { listenMetrics, type MetricsListener } from './metrics/listener.js'
import { keyMismatch, serverTlsOptions } from './tls/profile.js'
import { ensureSelfSigned } from './tls/self-signed.js'

export { banner, type Listening } from './banner.js'

export interface Running {
  app: FastifyInstance
  ctx: AppContext
  log: Logger
  url: string
  certFile?: string
  /** The Prometheus endpoint, when METRICS_PORT is set. */
  metricsUrl?: string
  close(): Promise<void>
}

/**
 * The certificate and key to serve, read and checked before anything else starts, with the
 * protocol versions and suites of TLS_MIN_VERSION and TLS_CIPHERS (src/tls/profile.ts).
 */
export function loadTls(config: Config): {
  https: { cert: Buffer; key: Buffer } & ReturnType<typeof serverTlsOptions>
  certFile: string
} {
  const { tls } = config.http
  let files: { certFile: string; keyFile: string }
  try {
    files = tls ? { certFile: tls.cert, keyFile: tls.key } : ensureSelfSigned(config.dataDir)
  } catch (err) {
    throw new ConfigError(`DATA_DIR cannot be used: ${config.dataDir}: ${systemReason(err)}`)
  }
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file)
    } catch (err) {
      throw new ConfigError(`${name} cannot be read: ${file}: ${systemReason(err)}`)
    }
  }
  const https = {
    ...serverTlsOptions(config.http.tlsProfile),
    cert: read('TLS_CERT', files.certFile),
    key: read('TLS_KEY', files.keyFile),
  }
  try {
    createSecureContext(https)
  } catch (err) {
    throw new ConfigError(
      `TLS_CERT and TLS_KEY are not a PEM certificate and its key: ${firstLine(err)}`,
    )
  }
  const mismatch = keyMismatch(config.http.tlsProfile, https.key)
  if (mismatch) throw new ConfigError(mismatch)
  return { https, certFile: files.certFile }
}

const firstLine = (err: unknown) => String((err as Error).message ?? err).split('\n')[0]

async function listen(app: FastifyInstance, { host, port }: Config['http']) {
  try {
    await app.listen({ host, port })
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'EADDRINUSE') throw new ConfigError(`PORT ${port} is already in use on ${host}`)
    if (code?.startsWith('E')) {
      throw new ConfigError(`cannot listen on HOST ${host} PORT ${port}: ${firstLine(err)}`)
    }
    throw err
  }
}

/** What a worker of a primary (src/cluster) changes in the instance it starts. */
export interface StartOptions {
  /** Its index among the workers (answered by /readyz). */
  worker?: number
  /** Its IPC channel to the primary (rate limits without REDIS_URL, usage counts, attempts). */
  primary?: Overrides['primary']
  /** The primary serves METRICS_PORT, aggregated: the worker opens no listener of its own. */
  metricsListener?: boolean
}

/** Starts the service: TLS, context and migrations, listen (and the metrics listener). */
export async function start(config: Config, options: StartOptions = {}): Promise<Running> {
  const log = createLogger(config.logLevel)
  const { http } = config
  const tls = http.trustProxy ? undefined : loadTls(config)
  const ctx = await createContext(config, {
    log,
    waitForDatabase: true,
    worker: options.worker,
    primary: options.primary,
  })
  const app = buildApp(ctx, { https: tls?.https, logger: log })
  let metrics: MetricsListener | undefined
  try {
    await listen(app, http)
    if (config.metrics && options.metricsListener !== false) {
      metrics = await listenMetrics(ctx.metrics.registry, config.metrics)
    }
  } catch (err) {
    if (app.server.listening) await app.close()
    await ctx.close()
    throw err
  }
  ctx.startBackground()
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : http.port
  const scheme = tls ? 'https' : 'http'
  return {
    app,
    ctx,
    log,
    url: `${scheme}://${http.host.includes(':') ? `[${http.host}]` : http.host}:${port}`,
    certFile: tls?.certFile,
    metricsUrl: metrics?.url,
    close: () => drain(app, ctx, metrics),
  }
}

/**
 * While a load balancer watches /readyz (asked within the last minute), it gets this long to see
 * the 503 before the server stops accepting; requests keep being served meanwhile.
 */
const drainGraceMs = 3_000
/** Past this, connections still open at shutdown are cut, so that the process exits in 10 s. */
const drainDeadlineMs = 8_000

/**
 * Graceful shutdown: /readyz answers 503 at once (and, if it is being watched, for a grace
 * period); then the server stops accepting connections and closes idle ones; requests in
 * flight finish (a create's answer waits for its group commit); then the database and Redis
 * are closed. A connection still busy at the deadline is cut.
 */
async function drain(app: FastifyInstance, ctx: AppContext, metrics?: MetricsListener) {
  ctx.draining = true
  const deadline = setTimeout(() => app.server.closeAllConnections(), drainDeadlineMs)
  deadline.unref()
  try {
    if (Date.now() - ctx.probedAt < 60_000) await sleep(drainGraceMs)
    await app.close()
  } finally {
    clearTimeout(deadline)
    await metrics?.close()
    await ctx.close()
  }
}
