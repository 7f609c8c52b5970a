import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:https'
import path from 'node:path'
import { childEnv } from '../environment.js'

/**
 * A server started exactly as a supervisor starts it (`node dist/src/server.js`), with its
 * process at hand: for the tests that signal it, kill it or read its memory.
 */

const root = path.resolve(import.meta.dirname, '../..')

export interface Started {
  child: ChildProcess
  url: string
  ca: Buffer
  env: NodeJS.ProcessEnv
  exited: Promise<{ code: number | null; signal: string | null; at: number }>
  /** Everything it printed so far, stdout and stderr. */
  output: () => string
}

export async function startTessera(
  dataDir: string,
  extraEnv: Record<string, string> = {},
): Promise<Started> {
  const env = childEnv({
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000',
    ...extraEnv,
  })
  // In the data directory: a .env where the tests run must not configure the server.
  const child = spawn(process.execPath, [path.join(root, 'dist/src/server.js')], {
    env,
    cwd: dataDir,
  })
  let out = ''
  child.stdout.on('data', (d) => {
    out += d
  })
  child.stderr.on('data', (d) => {
    out += d
  })
  const exited = new Promise<{ code: number | null; signal: string | null; at: number }>(
    (resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })),
  )
  const url = await new Promise<string>((resolve, reject) => {
    const poll = setInterval(() => {
      const m = /Tessera is listening on (\S+)/.exec(out)
      if (m?.[1]) {
        clearInterval(poll)
        resolve(m[1])
      }
    }, 20)
    void exited.then(() => {
      clearInterval(poll)
      reject(new Error(`server exited:\n${out}`))
    })
  })
  const ca = readFileSync(path.join(dataDir, 'tls', 'cert.pem'))
  return { child, url, ca, env, exited, output: () => out }
}

const agents = new WeakMap<Started, Agent>()
export function send(server: Started, method: string, route: string, body?: unknown) {
  let agent = agents.get(server)
  if (agent === undefined) {
    agent = new Agent({ keepAlive: true, ca: server.ca, maxSockets: 64 })
    agents.set(server, agent)
  }
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${server.url}${route}`, { method, agent }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on('error', reject)
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}
