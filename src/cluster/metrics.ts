import type { Worker } from 'node:cluster'
import { AggregatorRegistry, type Registry } from 'prom-client'
import type { MetricsSource } from '../metrics/listener.js'

/** One worker's metrics, as prom-client's `getMetricsAsJSON` gives them. */
type WorkerMetrics = { type?: unknown }[]

/** A worker that has not answered in this long is counted with its last answer. */
const answerMs = 2_000

/**
 * METRICS_PORT of a primary: each scrape asks every worker for its metrics over IPC and adds
 * them up (prom-client's AggregatorRegistry: counters and histograms summed, and gauges too).
 *
 * Counters must never go down, or Prometheus reads a reset and `rate()` invents traffic: a
 * worker that does not answer in time is counted with its last answer, and the counters of a
 * worker that ended (replaced, or killed) stay in the sum from its last answer on. Scrapes that
 * arrive while one is being gathered share its answer: a burst of them asks each worker once.
 * The primary's `own` figures (its usage writes) are added in too.
 */
export function aggregatedMetrics(workers: () => [number, Worker][], own?: Registry) {
  let next = 0
  const waiting = new Map<number, (json: WorkerMetrics) => void>()
  const last = new Map<number, WorkerMetrics>()
  let ended: WorkerMetrics[] = []
  const ask = (worker: Worker) =>
    new Promise<WorkerMetrics | undefined>((resolve) => {
      if (!worker.isConnected()) return resolve(undefined)
      const id = ++next
      const timer = setTimeout(() => {
        waiting.delete(id)
        resolve(undefined)
      }, answerMs)
      waiting.set(id, (json) => {
        clearTimeout(timer)
        waiting.delete(id)
        resolve(json)
      })
      worker.send({ tessera: 'metrics', id }, undefined, () => {})
    })
  const gather = async (): Promise<string> => {
    const answers = await Promise.all(
      workers().map(async ([index, worker]) => {
        const json = await ask(worker)
        if (json !== undefined) last.set(index, json)
        return json ?? last.get(index)
      }),
    )
    if (ended.length > 1) {
      // Ended workers' counters are merged into one, keeping any that ended meanwhile.
      const merging = ended
      const merged = await AggregatorRegistry.aggregate(merging).getMetricsAsJSON()
      ended = [merged, ...ended.slice(merging.length)]
    }
    const found = answers.filter((a): a is WorkerMetrics => a !== undefined)
    const mine = own === undefined ? [] : [(await own.getMetricsAsJSON()) as WorkerMetrics]
    return AggregatorRegistry.aggregate([...found, ...ended, ...mine]).metrics()
  }
  let gathering: Promise<string> | undefined
  return {
    contentType: AggregatorRegistry.PROMETHEUS_CONTENT_TYPE,
    metrics(): Promise<string> {
      gathering ??= gather().finally(() => {
        gathering = undefined
      })
      return gathering
    },
    /** A worker's answer. */
    answered(message: { id: number; json: unknown[] }) {
      waiting.get(message.id)?.(message.json as WorkerMetrics)
    },
    /** The worker of `index` ended: its counters (not its gauges) stay in the sum. */
    retired(index: number) {
      const json = last.get(index)
      last.delete(index)
      const counters = json?.filter((m) => m.type === 'counter' || m.type === 'histogram')
      if (counters !== undefined && counters.length > 0) ended.push(counters)
    },
  } satisfies MetricsSource & Record<string, unknown>
}
