import { type ChildProcess, execFile, spawn } from 'node:child_process'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
const modeOf = (file: string) => statSync(file).mode & 0o777

/** The most permissive umask: whatever stays private under it is private by its own mode. */
const underUmask000 = (args: string[]) => [
  '-c',
  'umask 000 && exec "$0" "$@"',
  process.execPath,
  ...args,
]

function environment(dataDir: string): NodeJS.ProcessEnv {
  // SQLite only (no DATABASE_URL): the files in question are DATA_DIR's.
  return childEnv({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'trace' })
}

/** The built server under umask 000, until `stop`. */
async function serve(dataDir: string) {
  const child: ChildProcess = spawn(
    '/bin/sh',
    underUmask000([path.join(root, 'dist/src/server.js')]),
    { env: environment(dataDir), cwd: path.dirname(dataDir) },
  )
  let out = ''
  child.stdout?.on('data', (d) => {
    out += d
  })
  child.stderr?.on('data', (d) => {
    out += d
  })
  await new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => {
      if (out.includes('Tessera is listening')) {
        clearInterval(poll)
        resolve()
      }
    }, 20)
    child.once('exit', (code) => {
      clearInterval(poll)
      reject(new Error(`server exited with ${code}:\n${out}`))
    })
  })
  return {
    stop: (signal: NodeJS.Signals = 'SIGTERM') =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve())
        child.kill(signal)
      }),
  }
}

const node = (dataDir: string, script: string, ...args: string[]) =>
  run('/bin/sh', underUmask000([path.join(root, script), ...args]), {
    env: environment(dataDir),
    // Not the repository: a .env there must not configure these runs.
    cwd: path.dirname(dataDir),
    timeout: 20_000,
  })
const cli = (dataDir: string, ...args: string[]) => node(dataDir, 'bin/tessera.js', ...args)

/** How a run ended: its exit code and what it wrote on stderr. */
const outcome = (dataDir: string, script: string, ...args: string[]) =>
  node(dataDir, script, ...args).then(
    ({ stderr }) => ({ code: 0, stderr }),
    (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
  )

/** Every path under `dir` whose mode lets another user in. */
function openToOthers(dir: string): string[] {
  const open: string[] = []
  const walk = (at: string) => {
    if ((modeOf(at) & 0o077) !== 0) open.push(`${at} ${modeOf(at).toString(8)}`)
    if (statSync(at).isDirectory()) for (const name of readdirSync(at)) walk(path.join(at, name))
  }
  walk(dir)
  return open
}

const freshDir = () => path.join(mkdtempSync(path.join(tmpdir(), 'tessera-modes-')), 'data')

describe('files in DATA_DIR', () => {
  it('are open to no other user when the server creates them, whatever the umask', async () => {
    const dataDir = freshDir()
    const server = await serve(dataDir)
    try {
      expect(modeOf(dataDir)).toBe(0o700)
      expect(modeOf(path.join(dataDir, 'signing-keys.json'))).toBe(0o600)
      expect(modeOf(path.join(dataDir, 'tls'))).toBe(0o700)
      expect(modeOf(path.join(dataDir, 'tls', 'key.pem'))).toBe(0o600)
      // Open while the server runs: the database and its WAL and shared-memory files.
      for (const name of ['tessera.db', 'tessera.db-wal', 'tessera.db-shm']) {
        expect(modeOf(path.join(dataDir, name)), name).toBe(0o600)
      }
      expect(openToOthers(dataDir)).toEqual([])
    } finally {
      await server.stop()
    }
  })

  it('are open to no other user when the CLI creates them first', async () => {
    const dataDir = freshDir()
    await cli(dataDir, 'account', 'create', 'alice')
    expect(existsSync(path.join(dataDir, 'tessera.db'))).toBe(true)
    expect(modeOf(dataDir)).toBe(0o700)
    expect(openToOthers(dataDir)).toEqual([])
    const otherDir = freshDir()
    await cli(otherDir, 'keys', 'rotate')
    expect(modeOf(path.join(otherDir, 'signing-keys.json'))).toBe(0o600)
    expect(openToOthers(otherDir)).toEqual([])
  })

  it("are tightened when an older run left them open; DATA_DIR's own mode is the operator's", async () => {
    const dataDir = freshDir()
    mkdirSync(dataDir, { mode: 0o755 })
    chmodSync(dataDir, 0o755)
    // Killed: the database's WAL and shared-memory files stay behind.
    await (await serve(dataDir)).stop('SIGKILL')
    const files = ['tessera.db', 'tessera.db-wal', 'tessera.db-shm', 'tls/cert.pem']
    for (const name of files) chmodSync(path.join(dataDir, name), 0o644)
    chmodSync(path.join(dataDir, 'tls'), 0o755)
    // A certificate without its key is made again, over the old file.
    rmSync(path.join(dataDir, 'tls', 'key.pem'))
    const server = await serve(dataDir)
    try {
      for (const name of [...files, 'tls/key.pem']) {
        expect(modeOf(path.join(dataDir, name)), name).toBe(0o600)
      }
      expect(modeOf(path.join(dataDir, 'tls'))).toBe(0o700)
      expect(modeOf(dataDir)).toBe(0o755)
      expect(openToOthers(dataDir)).toEqual([`${dataDir} 755`])
    } finally {
      await server.stop()
    }
  })
})

describe('a key file open to other users', () => {
  it('stops the server and the CLI, saying so in one line, until it is chmod 600', {
    timeout: 90_000,
  }, async () => {
    const dataDir = freshDir()
    await (await serve(dataDir)).stop()
    const keyFile = path.join(dataDir, 'signing-keys.json')
    const cases = [
      [0o644, 'readable'],
      [0o640, 'readable'],
      [0o620, 'writable'],
      [0o601, 'accessible'],
    ] as const
    for (const [mode, how] of cases) {
      chmodSync(keyFile, mode)
      const octal = mode.toString(8).padStart(4, '0')
      const line = `tessera: ${keyFile} is ${how} by other users (mode ${octal}); run chmod 600 ${keyFile}\n`
      // Every entry point once; the other modes through one of them.
      const runs: [string, ...string[]][] =
        mode === 0o644
          ? [
              ['dist/src/server.js'],
              ['bin/tessera.js', 'serve'],
              ['bin/tessera.js', 'account', 'create', 'bob'],
              ['bin/tessera.js', 'migrate'],
              ['bin/tessera.js', 'keys', 'rotate'],
            ]
          : [['bin/tessera.js', 'keys', 'rotate']]
      for (const [script, ...args] of runs) {
        const ended = await outcome(dataDir, script, ...args)
        expect(ended, [script, ...args].join(' ')).toEqual({ code: 1, stderr: line })
      }
      expect(modeOf(keyFile)).toBe(mode)
    }
    chmodSync(keyFile, 0o600)
    await (await serve(dataDir)).stop()
    expect((await cli(dataDir, 'account', 'create', 'alice')).stdout).toContain('setupUrl')
  })
})
