import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { tessera } from '../e2e/server.js'
import { type Started, startTessera } from '../e2e/spawned.js'
import { type Answer, type Connection, code, connection, pair } from '../e2e/workers.js'
import { awayFromWindowEdge, fleetEnv } from './env.js'

// Workers in a fleet: with DATABASE_URL and REDIS_URL they count in Redis and learn of changes
// through LISTEN/NOTIFY, as instances do; a single-process instance beside them is one more.

const fleet = fleetEnv()
const dirs: string[] = []
const started: Started[] = []
const start = async (extra: Record<string, string>) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-fleet-workers-'))
  dirs.push(dir)
  const server = await startTessera(dir, { ...fleet.env, ...extra })
  started.push(server)
  return server
}

afterAll(async () => {
  for (const s of started) s.child.kill('SIGTERM')
  await Promise.all(started.map((s) => s.exited))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  await fleet.drop()
})

/** Asks on `c` until the answer is not `TokenValid` (at most 2 s). */
async function untilRefused(c: Connection, route: string): Promise<Answer> {
  const since = performance.now()
  let answer = await c.send('GET', route)
  while (code(answer) === 'TokenValid' && performance.now() - since < 2_000) {
    answer = await c.send('GET', route)
  }
  return answer
}

describe('WORKERS=2 on PostgreSQL and Redis', () => {
  it('counts one limit in Redis across workers and instances: 3 + 3, then 1 more', async () => {
    const workers = await start({ WORKERS: '2', RATE_LIMIT_PER_MINUTE: '5' })
    const single = await start({ RATE_LIMIT_PER_MINUTE: '5' })
    await tessera(workers.env, 'account', 'create', 'limited')
    const sk = await tessera(
      workers.env,
      'token',
      'create',
      'limited',
      '--scopes',
      'tokens:read',
      '--note',
      'test',
    )
    const [a, b] = await pair(workers)
    await awayFromWindowEdge(5)
    const route = `/tokens/v2?access_token=${sk.token}`
    const answers = await Promise.all([
      ...[1, 2, 3].map(() => a.send('GET', route)),
      ...[1, 2, 3].map(() => b.send('GET', route)),
    ])
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429])
    expect((await connection(single).send('GET', route)).status).toBe(429)
  })

  it('refuses a token deleted through one worker on the other and on another instance', async () => {
    const workers = await start({ WORKERS: '2', RATE_LIMIT_PER_MINUTE: '100000' })
    const single = await start({ RATE_LIMIT_PER_MINUTE: '100000' })
    await tessera(workers.env, 'account', 'create', 'revoking')
    const sk = await tessera(
      workers.env,
      'token',
      'create',
      'revoking',
      '--scopes',
      'tokens:read,tokens:write,styles:read',
      '--note',
      'test',
    )
    const [a, b] = await pair(workers)
    const elsewhere = connection(single)
    const made = await a.send('POST', `/tokens/v2/revoking?access_token=${sk.token}`, {
      scopes: ['styles:read'],
    })
    const { id, token } = JSON.parse(made.body) as { id: string; token: string }
    const route = `/tokens/v2?access_token=${token}`
    for (const c of [a, b, elsewhere]) expect(code(await c.send('GET', route))).toBe('TokenValid')
    const removed = await a.send('DELETE', `/tokens/v2/revoking/${id}?access_token=${sk.token}`)
    expect(removed.status).toBe(204)
    for (const c of [a, b, elsewhere])
      expect(code(await untilRefused(c, route))).toBe('TokenRevoked')
  })
})
