import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { dialectEnv } from '../dialect.js'
import { send, startTessera } from './spawned.js'

/**
 * SIGTERM, as a supervisor sends it to the command docs/operations.md gives it
 * (`node dist/src/server.js`): /readyz turns 503 first, requests in flight are answered and
 * their writes kept, and the process exits by itself within 10 seconds.
 */

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)
const storage = dialectEnv()
afterAll(() => storage.drop())

async function cli(env: NodeJS.ProcessEnv, ...args: string[]) {
  const { stdout } = await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], {
    env,
    cwd: env.DATA_DIR,
  })
  return JSON.parse(stdout)
}

describe('SIGTERM', () => {
  it('turns /readyz 503, answers and keeps the creates in flight, and exits 0 within 10 s', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-shutdown-'))
    const server = await startTessera(dataDir, storage.env)
    await cli(server.env, 'account', 'create', 'drained')
    const sk = (
      await cli(
        server.env,
        'token',
        'create',
        'drained',
        '--scopes',
        'tokens:write',
        '--note',
        'test',
      )
    ).token as string
    expect(await send(server, 'GET', '/readyz')).toEqual({
      status: 200,
      body: '{"status":"ready"}',
    })

    const creates = Array.from({ length: 40 }, (_, i) =>
      send(server, 'POST', `/tokens/v2/drained?access_token=${sk}`, { note: `in flight ${i}` }),
    )
    const signalled = performance.now()
    server.child.kill('SIGTERM')
    const readyz = await send(server, 'GET', '/readyz')
    const healthz = await send(server, 'GET', '/healthz')
    const answers = await Promise.all(creates)
    const exit = await server.exited
    const seconds = (exit.at - signalled) / 1000
    console.log(
      `SIGTERM with 40 creates in flight: exit ${exit.code} after ${seconds.toFixed(2)} s`,
    )

    expect(readyz).toEqual({
      status: 503,
      body: '{"message":"Service Unavailable","details":"shutting down"}',
    })
    expect(healthz).toEqual({ status: 200, body: '{"status":"ok"}' })
    expect(answers.map((a) => a.status)).toEqual(creates.map(() => 200))
    expect(exit).toMatchObject({ code: 0, signal: null })
    expect(seconds).toBeLessThan(10)

    // Every answered create is there after a restart, with the same string.
    const again = await startTessera(dataDir, storage.env)
    try {
      for (const answer of answers) {
        const { token } = JSON.parse(answer.body) as { token: string }
        const retrieved = await send(again, 'GET', `/tokens/v2?access_token=${token}`)
        expect(JSON.parse(retrieved.body).code).toBe('TokenValid')
      }
    } finally {
      again.child.kill('SIGTERM')
      await again.exited
    }
  })

  it('exits at once when nothing watches /readyz, idle keep-alive connections included', async () => {
    const server = await startTessera(
      mkdtempSync(path.join(tmpdir(), 'tessera-shutdown-')),
      storage.env,
    )
    expect((await send(server, 'GET', '/healthz')).status).toBe(200)
    const signalled = performance.now()
    server.child.kill('SIGTERM')
    const exit = await server.exited
    expect(exit).toMatchObject({ code: 0, signal: null })
    expect(exit.at - signalled).toBeLessThan(2_000)
  })
})
