import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)

async function run(file: string, args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await exec(process.execPath, [path.join(root, file), ...args], {
      // The caller's PORT or PUBLIC_URL must not change the printed links; nor a .env here.
      env: childEnv(env),
      cwd: env.DATA_DIR,
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

const tessera = (args: string[], env: Record<string, string>) => run('bin/tessera.js', args, env)

describe('the tessera command', () => {
  const DATA_DIR = mkdtempSync(path.join(tmpdir(), 'tessera-cli-'))

  it('creates an account with its default token and prints it as JSON', async () => {
    const res = await tessera(
      ['account', 'create', 'cli-user', '--plan', 'pro', '--feature', 'navigation'],
      { DATA_DIR },
    )
    expect(res.code).toBe(0)
    const account = JSON.parse(res.stdout)
    expect(account).toMatchObject({ username: 'cli-user', plan: 'pro', features: ['navigation'] })
    expect(account.defaultToken).toMatchObject({
      usage: 'pk',
      default: true,
      note: 'Default public token',
    })
    expect(account.defaultToken.scopes).toContain('navigation:read')
    expect(account.setupUrl).toMatch(
      /^https:\/\/127\.0\.0\.1:8443\/account\/setup\/[A-Za-z0-9_-]{43}$/,
    )
  })

  it('prints a fresh setup link with account invite, under PUBLIC_URL', async () => {
    const env = { DATA_DIR, PUBLIC_URL: 'https://tokens.example.com' }
    const res = await tessera(['account', 'invite', 'cli-user'], env)
    expect(res.code).toBe(0)
    const invited = JSON.parse(res.stdout)
    expect(Object.keys(invited)).toEqual(['username', 'setupUrl'])
    expect(invited.username).toBe('cli-user')
    expect(invited.setupUrl).toMatch(
      /^https:\/\/tokens\.example\.com\/account\/setup\/[A-Za-z0-9_-]{43}$/,
    )
    const missing = await tessera(['account', 'invite', 'nobody'], env)
    expect(missing).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'tessera: no such account: nobody\n',
    })
  })

  it('creates a token as the account holder', async () => {
    const res = await tessera(
      [
        'token',
        'create',
        'cli-user',
        '--scopes',
        'tokens:write,styles:read',
        '--note',
        'ci',
        '--allowed-url',
        'example.com',
      ],
      { DATA_DIR },
    )
    expect(res.code).toBe(0)
    expect(JSON.parse(res.stdout)).toMatchObject({
      usage: 'sk',
      note: 'ci',
      scopes: ['tokens:write', 'styles:read'],
      allowedUrls: ['example.com'],
    })
  })

  it.each([
    [['account', 'create', 'Bad Name'], 1, /username must be/],
    [['account', 'create', 'cli-user'], 1, /already exists/],
    [['account', 'create', 'x', '--plan', 'gold'], 1, /no such plan: gold/],
    [
      ['token', 'create', 'nobody', '--note', 'test', '--scopes', 'styles:read'],
      1,
      /no such account: nobody/,
    ],
    [
      ['token', 'create', 'cli-user', '--scopes', 'nope', '--note', 'test'],
      1,
      /scopes are invalid/,
    ],
    [['frobnicate'], 2, /^tessera: unknown command frobnicate; the commands are serve, /],
  ])('%j exits %i with a message on stderr', async (args, code, message) => {
    const res = await tessera(args, { DATA_DIR })
    expect(res.code).toBe(code)
    expect(res.stderr).toMatch(message)
    expect(res.stdout).toBe('')
  })

  it('creates accounts from several processes at once on one SQLite file', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `together-${i}`)
    const results = await Promise.all(
      names.map((name) => tessera(['account', 'create', name], { DATA_DIR })),
    )
    expect(results.map((r) => [r.code, r.stderr])).toEqual(names.map(() => [0, '']))
  })

  it('migrates', async () => {
    expect(JSON.parse((await tessera(['migrate'], { DATA_DIR })).stdout)).toEqual({
      migrated: true,
    })
  })

  it('stops the server at start-up on a bad setting, with a one-line reason', async () => {
    const res = await run('dist/src/server.js', [], { DATA_DIR, PORT: 'eighty' })
    expect(res.code).toBe(1)
    expect(res.stderr).toBe('tessera: PORT must be an integer between 0 and 65535, got "eighty"\n')
  })
})
