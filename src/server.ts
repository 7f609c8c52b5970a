import { readFileSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { type Logger, pino } from 'pino'
import { buildApp, redactUrl } from './app.js'
import { type Config, readEnv, toConfig } from './config.js'
import { type AppContext, createContext } from './context.js'
import { ensureSelfSigned } from './tls/self-signed.js'

export interface Running {
  app: FastifyInstance
  ctx: AppContext
  log: Logger
  url: string
  certFile?: string
  close(): Promise<void>
}

/** Starts the service: context, migrations, TLS, listen. */
export async function start(config: Config): Promise<Running> {
  const log = pino({
    level: config.logLevel,
    serializers: {
      req: (req) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
    },
  })
  const ctx = await createContext(config, { log, waitForDatabase: true })
  const { http } = config
  let https: { cert: Buffer; key: Buffer } | undefined
  let certFile: string | undefined
  if (!http.trustProxy) {
    const files = http.tls
      ? { certFile: http.tls.cert, keyFile: http.tls.key }
      : ensureSelfSigned(config.dataDir)
    certFile = files.certFile
    https = { cert: readFileSync(files.certFile), key: readFileSync(files.keyFile) }
  }
  const app = buildApp(ctx, { https, logger: log })
  await app.listen({ host: http.host, port: http.port })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : http.port
  const scheme = https ? 'https' : 'http'
  return {
    app,
    ctx,
    log,
    url: `${scheme}://${http.host.includes(':') ? `[${http.host}]` : http.host}:${port}`,
    certFile,
    async close() {
      await app.close()
      await ctx.close()
    },
  }
}

/** `npm start` and `tessera serve`: start, say where, and shut down cleanly on a signal. */
export async function serve(config: Config): Promise<void> {
  const running = await start(config)
  const say = (line = '') => process.stdout.write(`${line}\n`)
  say()
  say(`Tessera is listening on ${running.url} (Link origin ${running.app.publicUrl})`)
  if (running.certFile) {
    say(`TLS certificate: ${running.certFile}`)
    if (!config.http.tls) {
      say(`  self-signed; let clients trust it with NODE_EXTRA_CA_CERTS=${running.certFile}`)
    }
  } else {
    say('TRUST_PROXY=1: plain HTTP behind a TLS-terminating proxy (X-Forwarded-Proto: https)')
  }
  say(`Data: ${config.db.kind === 'sqlite' ? config.db.file : 'PostgreSQL (DATABASE_URL)'}`)
  say()
  say('Get a first token:')
  say('  npx tessera account create alice')
  say('  npx tessera token create alice --scopes tokens:read,tokens:write,scopes:list')
  say(
    `  curl --cacert ${running.certFile ?? '<cert>'} "${running.url}/tokens/v2/alice?access_token=<token>"`,
  )
  say()
  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    running.log.info({ signal }, 'shutting down')
    running.close().then(
      () => {
        process.exitCode = 0
      },
      (err) => {
        running.log.error({ err }, 'shutdown failed')
        process.exitCode = 1
      },
    )
  }
  process.once('SIGINT', () => shutdown('SIGINT'))
  process.once('SIGTERM', () => shutdown('SIGTERM'))
}

const entry = process.argv[1]
if (entry !== undefined && realpathSync(entry) === fileURLToPath(import.meta.url)) {
  try {
    await serve(toConfig(readEnv()))
  } catch (err) {
    process.stderr.write(`tessera: ${(err as Error).message}\n`)
    process.exitCode = 1
  }
}
