import type { Worker } from 'node:cluster'
import { describe, expect, it } from 'vitest'
import { aggregatedMetrics } from '../../src/cluster/metrics.js'

// The primary's METRICS_PORT source, with workers that answer over a channel of this test's
// (the real IPC is covered by test/e2e/workers.test.ts).

const counterOf = (value: number) => [
  {
    name: 'tessera_things_total',
    help: 'Things',
    type: 'counter',
    aggregator: 'sum',
    values: [{ value, labels: {} }],
  },
]

/** A worker answering `value` for its counter; `asked` counts the requests it got. */
function fakeWorker(answer: (id: number) => void) {
  const worker = {
    asked: 0,
    isConnected: () => true,
    send(message: { id: number }) {
      worker.asked++
      setImmediate(() => answer(message.id))
      return true
    },
  }
  return worker
}

describe("the primary's metrics", () => {
  it('asks each worker once for scrapes that arrive together, and adds their counters up', async () => {
    const workers: [number, ReturnType<typeof fakeWorker>][] = []
    const source = aggregatedMetrics(() => workers as unknown as [number, Worker][])
    workers.push(
      [0, fakeWorker((id) => source.answered({ id, json: counterOf(3) }))],
      [1, fakeWorker((id) => source.answered({ id, json: counterOf(4) }))],
    )
    const texts = await Promise.all([source.metrics(), source.metrics(), source.metrics()])
    expect(workers.map(([, w]) => w.asked)).toEqual([1, 1])
    expect(new Set(texts).size).toBe(1)
    expect(texts[0]).toContain('\ntessera_things_total 7\n')
    // The next scrape asks again.
    await source.metrics()
    expect(workers.map(([, w]) => w.asked)).toEqual([2, 2])
  })

  it("keeps an ended worker's counters in the sum, so that they never go down", async () => {
    const workers: [number, ReturnType<typeof fakeWorker>][] = []
    const source = aggregatedMetrics(() => workers as unknown as [number, Worker][])
    workers.push(
      [0, fakeWorker((id) => source.answered({ id, json: counterOf(3) }))],
      [1, fakeWorker((id) => source.answered({ id, json: counterOf(4) }))],
    )
    expect(await source.metrics()).toContain('\ntessera_things_total 7\n')
    workers.shift()
    source.retired(0)
    workers.unshift([0, fakeWorker((id) => source.answered({ id, json: counterOf(1) }))])
    expect(await source.metrics()).toContain('\ntessera_things_total 8\n')
    workers.pop()
    source.retired(1)
    expect(await source.metrics()).toContain('\ntessera_things_total 8\n')
  })
})
