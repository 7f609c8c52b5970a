import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { dialectEnv } from '../dialect.js'
import { childEnv } from '../environment.js'

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

export interface ServerProcess {
  url: string
  certFile: string
  env: NodeJS.ProcessEnv
  output: () => string
  /** Sends the server a signal (a crash test: SIGKILL); settles once it has exited. */
  kill(signal: NodeJS.Signals): Promise<void>
  stop(): Promise<void>
}

/** Starts the built server (`node dist/src/server.js`) on a random port. */
export async function startServer(extraEnv: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = extraEnv.DATA_DIR ?? mkdtempSync(path.join(tmpdir(), 'tessera-e2e-'))
  // A server given its own DATABASE_URL (several instances on one database) keeps it.
  const storage = extraEnv.DATABASE_URL ? undefined : dialectEnv()
  // None of the caller's variables for Tessera: a PORT in the shell must not move the server.
  const env = childEnv({
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    // Other test files run beside this server and keep the CPU busy: a late event loop is not
    // overload here (shedding has tests of its own, which set SHED_DELAY_MS).
    SHED_DELAY_MS: '0',
    ...storage?.env,
    ...extraEnv,
  })
  const child: ChildProcess = spawn(process.execPath, [path.join(root, 'dist/src/server.js')], {
    env,
    cwd: dataDir,
  })
  let out = ''
  child.stdout?.on('data', (d) => {
    out += d
  })
  child.stderr?.on('data', (d) => {
    out += d
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 20_000)
    const poll = setInterval(() => {
      const m = /Tessera is listening on (\S+)/.exec(out)
      if (m?.[1]) {
        clearTimeout(timer)
        clearInterval(poll)
        resolve(m[1])
      }
    }, 20)
    child.once('exit', (code) => {
      clearTimeout(timer)
      clearInterval(poll)
      reject(new Error(`server exited with ${code}:\n${out}`))
    })
  })
  const certFile = /TLS certificate: (\S+)/.exec(out)?.[1] ?? ''
  // A process ended by a signal has a signalCode and no exitCode.
  const end = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill(signal)
    })
  return {
    url,
    certFile,
    env,
    output: () => out,
    kill: (signal) => end(signal),
    async stop() {
      await end('SIGTERM')
      await storage?.drop()
    },
  }
}

/**
 * Runs `tessera` (bin/tessera.js) with the server's environment (or `env`, Tessera's variables
 * of the caller cleared) in its data directory; parses its JSON output.
 */
export async function tessera(env: NodeJS.ProcessEnv, ...args: string[]) {
  const { stdout } = await run(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], {
    env: childEnv(env),
    cwd: env.DATA_DIR,
  })
  return JSON.parse(stdout)
}
