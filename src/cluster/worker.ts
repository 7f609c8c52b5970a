import cluster from 'node:cluster'
import type { Config } from '../config.js'
import { start } from '../instance.js'
import { isMessage, type PrimaryMessage, type WorkerMessage } from './messages.js'

/** Tells the primary, while it is there to hear (after a disconnect `send` would throw). */
const send = (message: WorkerMessage) => {
  if (process.connected) process.send?.(message)
}

/**
 * A worker: one instance of the service on the primary's shared port. It reports where it
 * listens and when /readyz is probed, answers the primary's metrics requests, leases its rate
 * limits from the primary (unless REDIS_URL is set) and drains when the primary says so, when
 * it is signalled itself, or when the primary is gone.
 */
export async function runWorker(config: Config): Promise<void> {
  // Set by the primary at fork, beside the environment it passes on (this is a process entry).
  const index = Number(process.env.TESSERA_WORKER ?? 0)
  // Otherwise node:cluster exits the worker at once when the IPC channel closes (the primary
  // gone): requests in flight would be cut and the usage counts not written. It drains instead.
  if (cluster.worker) cluster.worker.exitedAfterDisconnect = true
  const running = await start(config, {
    worker: index,
    metricsListener: false,
    primary: process,
  })
  const { ctx } = running
  send({
    tessera: 'listening',
    at: { url: running.url, publicUrl: running.app.publicUrl, certFile: running.certFile },
  })
  let told = 0
  const probes = setInterval(() => {
    if (ctx.probedAt === told) return
    told = ctx.probedAt
    send({ tessera: 'probed', at: told })
  }, 1000)
  probes.unref()
  let closing = false
  const close = (reason: string, probedAt = 0) => {
    if (closing) return
    closing = true
    clearInterval(probes)
    ctx.probedAt = Math.max(ctx.probedAt, probedAt)
    // Without its primary the worker is no longer supervised: worth a warning.
    const level = reason === 'the primary is gone' ? 'warn' : 'info'
    running.log[level]({ worker: index, reason }, 'worker shutting down')
    running
      .close()
      .then(
        () => {
          process.exitCode = 0
        },
        (err) => {
          running.log.error({ err }, 'shutdown failed')
          process.exitCode = 1
        },
      )
      // The IPC channel would keep the process alive.
      .finally(() => process.connected && process.disconnect())
  }
  process.on('message', (message) => {
    if (!isMessage<PrimaryMessage>(message)) return
    if (message.tessera === 'drain') close('drain', message.probedAt)
    else if (message.tessera === 'ping') send({ tessera: 'pong' })
    else if (message.tessera === 'metrics') {
      void ctx.metrics.registry.getMetricsAsJSON().then((json) => {
        send({ tessera: 'metrics', id: message.id, json })
      })
    }
  })
  process.once('disconnect', () => close('the primary is gone'))
  process.once('SIGTERM', () => close('SIGTERM'))
  process.once('SIGINT', () => close('SIGINT'))
}
