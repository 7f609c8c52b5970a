import { execFile, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import https from 'node:https'
import { createServer } from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'

/**
 * Shared by the container suites: podman through deploy/podman.sh (the containers.conf this
 * machine needs), HTTPS requests to published ports, free ports on 127.0.0.1.
 */

export const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)

const installed = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0

/**
 * Why the container suites cannot run here, or undefined when they can. In CI (CI=true) a
 * missing tool fails the suite instead: there the suites may not skip.
 */
export function missingTools(
  tools: string[],
  files: Record<string, string> = {},
): string | undefined {
  const missing = [
    ...tools.filter((tool) => !installed(tool)),
    ...Object.entries(files)
      .filter(([file]) => !existsSync(file))
      .map(([, pkg]) => pkg),
  ]
  if (missing.length === 0) return undefined
  const reason = `${missing.join(', ')} not installed (apt-get install -y ${missing.join(' ')})`
  if (process.env.CI === 'true') throw new Error(`container suites may not skip in CI: ${reason}`)
  return reason
}

export interface Run {
  stdout: string
  stderr: string
}

/** A script of deploy/ (or any command), its output; rejects with its stderr on failure. */
export async function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  try {
    return await exec(command, args, {
      cwd: root,
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    })
  } catch (err) {
    const e = err as Error & Partial<Run>
    throw new Error(`${command} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`)
  }
}

export const podman = (...args: string[]) => run(path.join(root, 'deploy/podman.sh'), args)

/** A `tessera` command whose output is JSON, run in a container. */
export async function tessera(container: string, ...args: string[]) {
  const { stdout } = await podman('exec', container, 'tessera', ...args)
  return JSON.parse(stdout)
}

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

export interface Answer {
  status: number
  body: string
}

/** One HTTPS request to 127.0.0.1:port, trusting only `ca` (a PEM) for the name `servername`. */
export function request(
  port: number,
  method: string,
  url: string,
  tls: { ca: string; servername: string },
  body?: unknown,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: url,
        ca: tls.ca,
        servername: tls.servername,
        agent: false,
        timeout: 5000,
        // The name the client asked for: Caddy serves a site by it (an unknown name gets an empty 200).
        headers: {
          host: `${tls.servername}:${port}`,
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
      },
    )
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out`)))
    req.on('error', reject)
    req.end(payload)
  })
}

/** Polls `probe` until it returns true, or throws after `seconds`. */
export async function until(what: string, seconds: number, probe: () => Promise<boolean>) {
  const deadline = Date.now() + seconds * 1000
  for (;;) {
    if (await probe().catch(() => false)) return
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/** The retrieve endpoint's `code` for a token. */
export async function retrieveCode(
  port: number,
  tls: { ca: string; servername: string },
  token: string,
) {
  const answer = await request(port, 'GET', `/tokens/v2?access_token=${token}`, tls)
  return (JSON.parse(answer.body) as { code?: string }).code
}
