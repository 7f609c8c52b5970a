import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'

/**
 * What a user gets from `npm pack` and `npm install -g ./tessera-<version>.tgz`: the tarball
 * holds what the server reads at run time (and no tests), better-sqlite3 compiles for the
 * Node that installs it, and `tessera serve` and the CLI work from the global prefix.
 */

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
const scratch = mkdtempSync(path.join(tmpdir(), 'tessera-pack-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const get = (url: string, ca: Buffer) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    request(url, { ca }, (res) => {
      let body = ''
      res.on('data', (d) => {
        body += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
      .on('error', reject)
      .end()
  })

describe('npm pack, npm install -g, tessera serve', () => {
  it('installs the packed tarball globally and serves a token the CLI created', async () => {
    // The build is the one `npm test` made (pretest); packing again would rebuild dist.
    const packed = await run(
      'npm',
      ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch],
      {
        cwd: root,
      },
    )
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[]
    const files = (info?.files ?? []).map((f) => f.path)
    expect(files).toContain('bin/tessera.js')
    expect(files).toContain('dist/src/server.js')
    expect(files).toContain('dist/src/db/migrations/index.js')
    expect(files).toContain('catalog/default.yaml')
    expect(files).toContain('src/dashboard/assets/app.css')
    expect(files.filter((f) => /^(test|bench|src\/.*\.ts$)|\.map$/.test(f))).toEqual([])

    const prefix = path.join(scratch, 'prefix')
    await run(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--allow-scripts=better-sqlite3',
        '--no-audit',
        '--no-fund',
        path.join(scratch, info?.filename ?? ''),
      ],
      { cwd: scratch, maxBuffer: 16 * 1024 * 1024 },
    )
    const tessera = path.join(prefix, 'bin', 'tessera')
    // A scoped name: `tessera` on the registry is an unrelated tile server.
    const installed = path.join(prefix, 'lib', 'node_modules', '@tessera', 'server')
    // Compiled at install for this Node (a binary for another ABI would not load).
    const sqlite = await run(
      process.execPath,
      [
        '-e',
        "const D = require('better-sqlite3'); console.log(new D(':memory:').prepare('select 6 * 7 as n').get().n)",
      ],
      { cwd: installed },
    )
    expect(sqlite.stdout).toBe('42\n')

    const dataDir = path.join(scratch, 'data')
    const env = childEnv({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' })
    const server = spawn(tessera, ['serve'], { env, cwd: scratch })
    let out = ''
    server.stdout.on('data', (d) => {
      out += d
    })
    server.stderr.on('data', (d) => {
      out += d
    })
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      server.once('exit', (code, signal) => resolve({ code, signal })),
    )
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const started = Date.now()
        const poll = setInterval(() => {
          const m = /Tessera is listening on (https:\/\/\S+)/.exec(out)
          if (m?.[1]) {
            clearInterval(poll)
            resolve(m[1])
          } else if (Date.now() - started > 60_000) {
            clearInterval(poll)
            reject(new Error(`tessera serve did not listen within 60 s:\n${out}`))
          }
        }, 50)
        void exited.then(() => {
          clearInterval(poll)
          reject(new Error(`tessera serve exited:\n${out}`))
        })
      })
      const certFile = /TLS certificate: (\S+)/.exec(out)?.[1]
      expect(certFile).toBe(path.join(dataDir, 'tls', 'cert.pem'))

      const cli = async (args: string[]) =>
        JSON.parse((await run(tessera, args, { env, cwd: scratch })).stdout)
      // The banner's command, as printed, from a folder of its own (no npx, no checkout).
      const port = new URL(url).port
      const printed = `DATA_DIR=${dataDir} PORT=${port} node ${installed}/bin/tessera.js`
      expect(out).toContain(`\n  ${printed} account create alice\n`)
      const home = mkdtempSync(path.join(scratch, 'home-'))
      const made = await run('sh', ['-c', `${printed} account create alice`], {
        env: childEnv({ HOME: home }),
        cwd: home,
      })
      const account = JSON.parse(made.stdout)
      expect(account.username).toBe('alice')
      expect(account.setupUrl).toMatch(
        new RegExp(`^https://127\\.0\\.0\\.1:${port}/account/setup/`),
      )
      const token = await cli([
        'token',
        'create',
        'alice',
        '--scopes',
        'tokens:read,scopes:list',
        '--note',
        'test',
      ])
      expect(token.scopes).toEqual(['tokens:read', 'scopes:list'])

      const ca = readFileSync(certFile ?? '')
      const retrieved = await get(`${url}/tokens/v2?access_token=${token.token}`, ca)
      expect(retrieved.status).toBe(200)
      expect(JSON.parse(retrieved.body)).toEqual({
        code: 'TokenValid',
        token: { usage: 'sk', user: 'alice', authorization: token.id },
      })
    } finally {
      server.kill('SIGTERM')
    }
    expect(await exited).toEqual({ code: 0, signal: null })
  }, 600_000)
})
