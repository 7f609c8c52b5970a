import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type Started, startTessera } from './spawned.js'
import { alive, connection, workerPids } from './workers.js'

// The primary's watchdog (WORKER_TIMEOUT_SECONDS). Our own supervision logic over node:cluster:
// on Node 20 only (.ci/node.sh says why); the runtime's part, signals and IPC, is in
// workers.test.ts, which runs on every Node.

const dirs: string[] = []
const servers: Started[] = []
/** Stopped workers: a stopped process outlives its primary, so each is killed at the end. */
const stopped: number[] = []
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

afterAll(async () => {
  for (const pid of stopped) if (alive(pid)) process.kill(pid, 'SIGKILL')
  for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe('WORKERS=2: a worker that stops answering', () => {
  it('kills and replaces a worker that stops answering (WORKER_TIMEOUT_SECONDS)', async () => {
    // The shortest timeout there is: a ping every 3.4 s, a kill 10-13.4 s after the last answer.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-watchdog-'))
    dirs.push(dataDir)
    const server = await startTessera(dataDir, { WORKERS: '2', WORKER_TIMEOUT_SECONDS: '10' })
    servers.push(server)
    const before = workerPids(server)
    const victim = before.get(0) as number
    // Stopped, it holds its connections and answers nothing: as a worker stuck in a loop.
    stopped.push(victim)
    process.kill(victim, 'SIGSTOP')
    const stoppedAt = Date.now()
    const deadline = stoppedAt + 30_000
    while (Date.now() < deadline) {
      const now = workerPids(server).get(0)
      if (now !== undefined && now !== victim) break
      await sleep(50)
    }
    // Not before the timeout: its last answer came at most one ping (3.4 s) before the stop.
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(10_000 - 3_400)
    const after = workerPids(server)
    expect(after.get(0)).not.toBe(victim)
    expect(after.get(1)).toBe(before.get(1))
    expect(alive(victim)).toBe(false)
    const lines = server.output().split('\n')
    expect(lines.filter((l) => l.includes('worker not answering: killing it'))).toEqual([
      expect.stringContaining(`"worker":0,"workerPid":${victim},"silentMs":`),
    ])
    // The replacement serves its share once it listens.
    const served = new Set<number>()
    const servedBy = Date.now() + 15_000
    while (Date.now() < servedBy && served.size < 2) {
      const c = connection(server)
      const { status, body } = await c.send('GET', '/readyz')
      c.agent.destroy()
      if (status === 200) served.add((JSON.parse(body) as { worker: number }).worker)
      await sleep(25)
    }
    expect([...served].sort()).toEqual([0, 1])
  })
})
