import cluster, { type Worker } from 'node:cluster'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { createContext } from '../context.js'
import { createLogger } from '../http/logging.js'
import { banner, type Listening, loadTls } from '../instance.js'
import { listenMetrics, type MetricsListener } from '../metrics/listener.js'
import { AttemptLedger, answerAttempts, isAttemptRequest } from '../ratelimit/attempts.js'
import { isLeaseRequest, LeaseLedger } from '../ratelimit/cluster.js'
import { isUsageHandover } from '../usage/handover.js'
import { isMessage, type PrimaryMessage, type WorkerMessage } from './messages.js'
import { aggregatedMetrics } from './metrics.js'
import { WorkersUsage } from './usage.js'

/** A worker that ends sooner than this after its start is restarted after a growing pause. */
const shortLifeMs = 5_000
const maxPauseMs = 5_000
/** Past this, workers that have not finished draining are killed (a drain takes at most 11 s). */
const drainDeadlineMs = 15_000
/** After a worker's exit, its IPC channel closes within this, or the primary stops waiting. */
const channelCloseMs = 2_000

/**
 * What every worker would otherwise race to make on a first start: DATA_DIR, the signing key
 * and operator key files, the self-signed certificate and the migrations (unless the database
 * is away: then each worker retries them, as an instance does).
 */
async function prepare(config: Config, log: Logger) {
  const ctx = await createContext(config, { log, waitForDatabase: true })
  await ctx.close()
  if (!config.http.trustProxy) loadTls(config)
}

/** A message to a worker that may be gone already (its exit is handled on its own). */
const tell = (worker: Worker, message: unknown) => {
  if (worker.isConnected()) worker.send(message as PrimaryMessage, undefined, () => {})
}

interface Slot {
  worker: Worker
  startedAt: number
  /** Consecutive short lives: the pause before the next start doubles with each. */
  failures: number
  /** When the worker last said anything (a ping's answer, a lease, …). */
  heardAt: number
  /** Killed for not answering: its exit replaces it. */
  hung?: true
}

const ping: PrimaryMessage = { tessera: 'ping' }

/**
 * The primary of `WORKERS=N`: prepares once, forks N workers sharing the port (node:cluster,
 * connections handed out round-robin), and supervises them: a worker that ends is replaced
 * (under the same index), SIGTERM or SIGINT drains them all as one instance drains, and the
 * process ends when they have. It answers the workers' rate-limit leases and sign-in attempts
 * (one count for the whole machine), writes the usage counts they hand over, and serves
 * METRICS_PORT with their metrics added up.
 */
export async function runPrimary(config: Config): Promise<void> {
  const log = createLogger(config.logLevel)
  await prepare(config, log)
  const primary = new Primary(config, log, WorkersUsage.open(config, log))
  // Bound before any worker starts: a port in use stops start-up in one line, as without workers.
  await primary.listenMetrics()
  process.once('SIGINT', () => primary.shutdown('SIGINT'))
  process.once('SIGTERM', () => primary.shutdown('SIGTERM'))
  for (let index = 0; index < config.workers; index++) primary.fork(index)
  primary.watch()
}

class Primary {
  private readonly ledger = new LeaseLedger()
  private readonly attempts = new AttemptLedger()
  private readonly slots = new Map<number, Slot>()
  private readonly listening = new Map<number, Listening>()
  /** Workers' IPC channels not closed yet: until then, messages of theirs may wait unread. */
  private readonly channels = new Set<Promise<void>>()
  private readonly metrics: ReturnType<typeof aggregatedMetrics>
  private metricsListener: MetricsListener | undefined
  private watchdog: NodeJS.Timeout | undefined
  private closing = false
  private started = false
  /** The last time any worker's /readyz was asked. */
  private probedAt = 0

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly usage: WorkersUsage,
  ) {
    const workers = () =>
      [...this.slots].map(([index, slot]): [number, Worker] => [index, slot.worker])
    this.metrics = aggregatedMetrics(workers, usage.registry)
  }

  async listenMetrics() {
    if (this.config.metrics) {
      this.metricsListener = await listenMetrics(this.metrics, this.config.metrics)
    }
  }

  fork(index: number, failures = 0) {
    const worker = cluster.fork({ TESSERA_WORKER: String(index) })
    // Node's own messages to a worker that just died fail with EPIPE: its exit is handled below.
    worker.on('error', (err) => this.log.warn({ worker: index, err: err.message }, 'worker IPC'))
    const now = Date.now()
    const disconnected = new Promise<void>((resolve) => worker.once('disconnect', resolve))
    this.channels.add(disconnected)
    const exit = new Promise<boolean>((resolve) =>
      worker.once('exit', (code) => resolve(code === 0)),
    )
    // Once both: a worker that did not drain (killed, crashed) lost its counts since its last
    // hand-over.
    void Promise.all([exit, disconnected]).then(([clean]) => {
      this.channels.delete(disconnected)
      const lost = this.usage.ended(worker.id, clean)
      if (lost > 0) this.log.warn({ worker: index, verifications: lost }, 'usage counts lost')
    })
    this.slots.set(index, { worker, startedAt: now, failures, heardAt: now })
    worker.on('message', (message) => this.received(index, worker, message))
    worker.on('exit', (code, signal) => this.exited(index, worker, code, signal))
  }

  private received(index: number, worker: Worker, message: unknown) {
    const slot = this.slots.get(index)
    if (slot?.worker === worker) slot.heardAt = Date.now()
    if (isLeaseRequest(message)) {
      tell(worker, { tessera: 'lease', id: message.id, ...this.ledger.answer(message) })
      return
    }
    if (isAttemptRequest(message)) {
      const answer = answerAttempts(this.attempts, message, Date.now())
      if (answer !== undefined) tell(worker, answer)
      return
    }
    if (isUsageHandover(message)) return this.usage.received(worker.id, message)
    if (!isMessage<WorkerMessage>(message)) return
    if (message.tessera === 'probed') this.probedAt = Math.max(this.probedAt, message.at)
    else if (message.tessera === 'metrics') this.metrics.answered(message)
    else if (message.tessera === 'listening') {
      this.listening.set(index, message.at)
      if (!this.started && !this.closing && this.listening.size === this.config.workers) {
        this.announce(message.at)
      }
    }
  }

  /**
   * Pings every listening worker and kills one that has said nothing for WORKER_TIMEOUT_SECONDS:
   * a worker whose event loop is stuck (an endless loop, a stopped process) still holds its
   * share of the connections, and only its exit hands them to a replacement.
   */
  watch() {
    const timeout = this.config.workerTimeoutMs
    const every = Math.min(5_000, Math.ceil(timeout / 3))
    let last = Date.now()
    this.watchdog = setInterval(() => {
      const now = Date.now()
      // The primary itself was held up (a stopped process, a loaded machine): the answers wait
      // unread in the pipes, since timers run before IPC is read. Silence counts from now.
      const late = now - last > 2 * every
      last = now
      // Before all listen, an exit stops the whole (see `exited`): only a started whole is watched.
      if (!this.started) return
      for (const [index, slot] of this.slots) {
        if (late) slot.heardAt = now
        if (!this.listening.has(index) || slot.hung) continue
        if (now - slot.heardAt <= timeout) {
          tell(slot.worker, ping)
          continue
        }
        slot.hung = true
        const workerPid = slot.worker.process.pid
        this.log.error(
          { worker: index, workerPid, silentMs: now - slot.heardAt },
          'worker not answering: killing it',
        )
        slot.worker.process.kill('SIGKILL')
      }
    }, every)
    this.watchdog.unref()
  }

  /** Every worker listens: the banner, once. */
  private announce(at: Listening) {
    this.started = true
    const metricsUrl = this.metricsListener?.url
    process.stdout.write(banner(this.config, { ...at, metricsUrl }, this.config.workers))
  }

  private exited(index: number, worker: Worker, code: number | null, signal: string | null) {
    const slot = this.slots.get(index)
    if (slot?.worker !== worker) return
    this.slots.delete(index)
    this.listening.delete(index)
    this.metrics.retired(index)
    if (this.closing) {
      if (this.slots.size === 0) void this.finish()
      return
    }
    if (!this.started) {
      // A worker that cannot start (a port in use, a bad certificate) said why on stderr: the
      // others would fail alike. Stop, as one process would.
      this.log.error({ worker: index, code, signal }, 'a worker failed to start: stopping')
      process.exitCode = 1
      this.shutdown()
      return
    }
    const short = Date.now() - slot.startedAt < shortLifeMs
    const failures = short ? slot.failures + 1 : 0
    const pause = short ? Math.min(maxPauseMs, 100 * 2 ** failures) : 0
    this.log.warn(
      { worker: index, code, signal, restartInMs: pause },
      'worker exited: starting another',
    )
    // Not kept: a shutdown during the pause does not wait for it.
    setTimeout(() => this.closing || this.fork(index, failures), pause).unref()
  }

  private async finish() {
    // What the workers handed over as they drained is read by the time their channels close.
    const late = new Promise((resolve) => setTimeout(resolve, channelCloseMs).unref())
    await Promise.race([Promise.all(this.channels), late])
    await this.usage.close()
    await this.metricsListener?.close()
    if (process.exitCode === undefined) process.exitCode = 0
  }

  shutdown(signal?: string) {
    if (this.closing) return
    this.closing = true
    clearInterval(this.watchdog)
    if (signal) this.log.info({ signal, workers: this.slots.size }, 'shutting down')
    const drain: PrimaryMessage = { tessera: 'drain', probedAt: this.probedAt }
    for (const [index, { worker }] of this.slots) {
      // One not yet listening has no handler for the message: the signal stops it (or drains it).
      if (this.listening.has(index)) tell(worker, drain)
      else worker.process.kill('SIGTERM')
    }
    const deadline = setTimeout(() => {
      for (const { worker } of this.slots.values()) worker.process.kill('SIGKILL')
    }, drainDeadlineMs)
    deadline.unref()
    if (this.slots.size === 0) void this.finish()
  }
}
