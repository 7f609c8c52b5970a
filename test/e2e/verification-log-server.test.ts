import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'
import { send, startTessera } from './spawned.js'

/**
 * The built server on SQLite writes its verification log from a thread of its own
 * (src/db/log-thread.ts): rows reach the database while it serves, and what it holds at a
 * clean stop is written before it exits. Read back with `tessera verifications`.
 */

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function setUp() {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-log-server-'))
  dirs.push(dir)
  const cli = async (...args: string[]) =>
    JSON.parse(
      (
        await run(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], {
          env: childEnv({ DATA_DIR: dir, LOG_LEVEL: 'warn' }),
          cwd: dir,
        })
      ).stdout,
    )
  await cli('account', 'create', 'acme')
  const pk = await cli('token', 'create', 'acme', '--scopes', 'styles:read', '--note', 'pk')
  const server = await startTessera(dir, { VERIFICATION_LOG: 'all' })
  return { cli, pk, server }
}

const rowsOf = (rows: { source: string; outcome: string; token: string | null }[]) =>
  rows.map((r) => [r.source, r.outcome, r.token])

describe('the verification log of a running server', () => {
  it('is written while it serves, by its writer thread', async () => {
    const { cli, pk, server } = await setUp()
    try {
      for (let i = 0; i < 3; i++) {
        expect((await send(server, 'GET', `/tokens/v2?access_token=${pk.token}`)).status).toBe(200)
      }
      // Written within the second's flush.
      let rows: { source: string; outcome: string; token: string | null }[] = []
      const deadline = Date.now() + 10_000
      while (rows.length < 3 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200))
        rows = await cli('verifications', 'acme', '--since', '1h')
      }
      expect(rowsOf(rows)).toEqual([
        ['retrieve', 'valid', pk.id],
        ['retrieve', 'valid', pk.id],
        ['retrieve', 'valid', pk.id],
      ])
    } finally {
      server.child.kill('SIGKILL')
    }
  })

  it('writes what it holds at a clean stop', async () => {
    const { cli, pk, server } = await setUp()
    expect((await send(server, 'GET', `/tokens/v2?access_token=${pk.token}`)).status).toBe(200)
    // At once: well within the second before the next flush.
    server.child.kill('SIGTERM')
    expect((await server.exited).code).toBe(0)
    const rows = await cli('verifications', 'acme', '--since', '1h')
    expect(rowsOf(rows)).toEqual([['retrieve', 'valid', pk.id]])
  })
})
