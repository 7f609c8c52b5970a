import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:https'
import { expect } from 'vitest'
import type { Started } from './spawned.js'

// Connections pinned to the workers of a `WORKERS=2` server, and its worker processes.

export interface Answer {
  status: number
  body: string
}

/** A keep-alive connection of its own: every request on it goes to the same worker. */
export function connection(server: Started) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: server.ca })
  /** A JSON body, or a form's fields (sent from the server's own origin, as a page sends it). */
  const send = (
    method: string,
    route: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    new Promise<Answer>((resolve, reject) => {
      const req = request(`${server.url}${route}`, { method, agent, headers }, (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
        // A worker killed while it wrote the body: the answer is cut off, never ended.
        res.on('error', reject)
        res.on('close', () => {
          if (!res.complete) reject(new Error('the answer was cut off'))
        })
      })
      req.on('error', reject)
      // An answer that never comes (its worker killed meanwhile) fails after 5 s, not never.
      req.setTimeout(5_000, () => req.destroy(new Error('no answer within 5 s')))
      if (body instanceof URLSearchParams) {
        req.setHeader('content-type', 'application/x-www-form-urlencoded')
        req.setHeader('origin', new URL(server.url).origin)
        return req.end(body.toString())
      }
      if (body !== undefined) req.setHeader('content-type', 'application/json')
      req.end(body === undefined ? undefined : JSON.stringify(body))
    })
  return { agent, send }
}
export type Connection = ReturnType<typeof connection>

/** `perWorker` connections to each of the two workers, learnt from /readyz. */
export async function pinned(
  server: Started,
  perWorker: number,
): Promise<[Connection[], Connection[]]> {
  const byWorker: [Connection[], Connection[]] = [[], []]
  for (let i = 0; i < 100 && byWorker.some((c) => c.length < perWorker); i++) {
    const c = connection(server)
    const { status, body } = await c.send('GET', '/readyz')
    expect(status).toBe(200)
    const { worker } = JSON.parse(body) as { worker: 0 | 1 }
    if (byWorker[worker].length < perWorker) byWorker[worker].push(c)
    else c.agent.destroy()
  }
  expect(byWorker.map((c) => c.length)).toEqual([perWorker, perWorker])
  return byWorker
}

/** A connection to each worker. */
export async function pair(server: Started): Promise<[Connection, Connection]> {
  const [[a], [b]] = await pinned(server, 1)
  if (a === undefined || b === undefined) throw new Error('not a connection to each worker')
  return [a, b]
}

/** Waits until the workers of `killed` (pid by index) have been replaced and answer /readyz. */
export async function replaced(server: Started, killed: Map<number, number>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  const waiting = new Set(killed.keys())
  while (waiting.size > 0) {
    if (Date.now() > deadline) throw new Error(`workers ${[...waiting]} not replaced in time`)
    await new Promise((r) => setTimeout(r, 50))
    const now = workerPids(server)
    if ([...killed].some(([index, pid]) => [undefined, pid].includes(now.get(index)))) continue
    const c = connection(server)
    const answer = await c.send('GET', '/readyz').catch(() => undefined)
    c.agent.destroy()
    if (answer?.status === 200)
      waiting.delete((JSON.parse(answer.body) as { worker: number }).worker)
  }
}

/** What a retrieve says of its token: `TokenValid`, `TokenRevoked`… (the status is 200). */
export const code = (answer: Answer) => (JSON.parse(answer.body) as { code: string }).code

/** The primary's workers: pid by index (TESSERA_WORKER in each one's environment). */
export const workerPids = (server: Started) => {
  const pid = server.child.pid
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)
  const byIndex = new Map<number, number>()
  for (const child of children.filter(Boolean)) {
    let env: string[]
    try {
      env = readFileSync(`/proc/${child}/environ`, 'utf8').split('\0')
    } catch {
      continue // Exited since the listing (the worker the test killed).
    }
    const index = env.find((e) => e.startsWith('TESSERA_WORKER='))?.split('=')[1]
    if (index !== undefined) byIndex.set(Number(index), Number(child))
  }
  return byIndex
}

export const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Sends on `c` until `until()`: how many answers were 200 and how many requests failed. */
export async function keepSending(c: Connection, route: string, until: () => boolean) {
  /** `failedAt`: when each failed request started (performance.now()). */
  const tally = { ok: 0, failed: 0, other: 0, failedAt: [] as number[] }
  while (!until()) {
    const started = performance.now()
    try {
      const { status } = await c.send('GET', route)
      if (status === 200) tally.ok++
      else tally.other++
    } catch {
      tally.failed++
      tally.failedAt.push(started)
    }
  }
  return tally
}
