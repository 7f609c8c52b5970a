import type { Worker } from 'node:cluster'
import { AggregatorRegistry } from 'prom-client'
import type { MetricsSource } from '../metrics/listener.js'

/** One worker's metrics, as prom-client's `getMetricsAsJSON` gives them. */
type WorkerMetrics = Parameters<typeof AggregatorRegistry.aggregate>[0][number]

/** A worker that has not answered in this long is left out of one scrape. */
const answerMs = 2_000

/**
 * METRICS_PORT of a primary: each scrape asks every worker for its metrics over IPC and adds
 * them up (prom-client's AggregatorRegistry: counters and histograms summed, and gauges too,
 * unless the metric says otherwise), so that one scrape speaks for the whole instance.
 */
export function aggregatedMetrics(workers: () => Worker[]) {
  let next = 0
  const waiting = new Map<number, (json: WorkerMetrics) => void>()
  const ask = (worker: Worker) =>
    new Promise<WorkerMetrics | undefined>((resolve) => {
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
      if (worker.isConnected()) worker.send({ tessera: 'metrics', id }, undefined, () => {})
    })
  return {
    contentType: AggregatorRegistry.PROMETHEUS_CONTENT_TYPE,
    async metrics(): Promise<string> {
      const answers = await Promise.all(workers().map(ask))
      const found = answers.filter((a): a is WorkerMetrics => a !== undefined)
      return AggregatorRegistry.aggregate(found).metrics()
    },
    /** A worker's answer. */
    answered(message: { id: number; json: unknown[] }) {
      waiting.get(message.id)?.(message.json as WorkerMetrics)
    },
  } satisfies MetricsSource & Record<string, unknown>
}
