import cluster from 'node:cluster'
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { runPrimary } from './cluster/primary.js'
import { runWorker } from './cluster/worker.js'
import { type Config, readEnv, toConfig } from './config.js'
import { describeFailure } from './failure.js'
import { banner, start } from './instance.js'

/**
 * `npm start` and `tessera serve`: one process, or with WORKERS > 1 a primary supervising that
 * many workers (src/cluster). A worker runs this same entry again and becomes one.
 */
export async function serve(config: Config): Promise<void> {
  if (cluster.isWorker) return runWorker(config)
  if (config.workers > 1) return runPrimary(config)
  const running = await start(config)
  process.stdout.write(
    banner(config, {
      url: running.url,
      publicUrl: running.app.publicUrl,
      certFile: running.certFile,
      metricsUrl: running.metricsUrl,
    }),
  )
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
    process.stderr.write(`tessera: ${describeFailure(err) ?? (err as Error).stack}\n`)
    process.exitCode = 1
    // A worker's IPC channel would keep it alive: its primary learns of the failure by its exit.
    if (cluster.isWorker) process.exit(1)
  }
}
