// `npm run bench:log-soak`: the verification log under the highest load this machine gives
// for BENCH_SOAK_SECONDS (600): one server on SQLite with VERIFICATION_LOG=all, retrieve of one
// pk over BENCH_CONNECTIONS (10) connections, then a clean stop. Every verification must be a
// row in the database or counted as dropped: prints the verifications the server counted
// (tessera_validations_total), the rows in the database after the stop, the rows it counted
// dropped, and whether they add up exactly.
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { load } from './load.js'

const root = path.resolve(import.meta.dirname, '..')
const require = createRequire(import.meta.url)
const exec = promisify(execFile)
const seconds = Number(process.env.BENCH_SOAK_SECONDS ?? 600)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10)
const dir = mkdtempSync(path.join(tmpdir(), 'tessera-soak-'))
const env = {
  ...process.env,
  DATA_DIR: dir,
  HOST: '127.0.0.1',
  PORT: '0',
  METRICS_PORT: '0',
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_MINUTE: '1000000000',
  VERIFICATION_LOG: 'all',
}
delete env.DATABASE_URL
delete env.REDIS_URL

const sum = (page, name) =>
  [...page.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'gm'))].reduce(
    (n, m) => n + Number(m[1]),
    0,
  )
const counter = (page, line) => Number(new RegExp(`^${line} (\\d+)`, 'm').exec(page)?.[1] ?? 0)

try {
  const cli = async (...args) =>
    JSON.parse(
      (await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], { env })).stdout,
    )
  await cli('account', 'create', 'soak')
  const pk = await cli('token', 'create', 'soak', '--scopes', 'styles:read', '--note', 'soak')
  const child = spawn(process.execPath, [path.join(root, 'dist/src/server.js')], { env })
  let out = ''
  child.stdout.on('data', (d) => {
    out += d
  })
  child.stderr.on('data', (d) => {
    out += d
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  while (!/Prometheus metrics: \S+/.test(out)) await new Promise((r) => setTimeout(r, 50))
  const base = /Tessera is listening on (\S+)/.exec(out)[1]
  const metrics = /Prometheus metrics: (\S+)/.exec(out)[1]
  const url = `${base}/tokens/v2?access_token=${pk.token}`
  process.stdout.write(`loading ${url.replace(pk.token, '<pk>')} for ${seconds} s...\n`)
  const result = await load({ url, connections, seconds })
  // The last second's rows written, then the counts read, then a clean stop.
  await new Promise((r) => setTimeout(r, 2_000))
  const page = await (await fetch(metrics)).text()
  child.kill('SIGTERM')
  const code = await exited
  const verified = sum(page, 'tessera_validations_total')
  const dropped = counter(page, 'tessera_verification_log_rows_total{result="dropped"}')
  const Database = require('better-sqlite3')
  const db = new Database(path.join(dir, 'tessera.db'), { readonly: true })
  const rows = db.prepare('select count(*) as n from verifications').get().n
  db.close()
  const lines = [
    `${seconds} s at ${result.rps.toFixed(0)} req/s (p50 ${result.p50} ms, p99 ${result.p99} ms), ${result.requests} requests; exit ${code}`,
    `verifications counted: ${verified}`,
    `rows in the database:  ${rows}`,
    `rows counted dropped:  ${dropped}`,
    `rows + dropped = verifications: ${rows + dropped === verified ? 'yes, exactly' : `NO (${rows + dropped - verified})`}`,
  ]
  process.stdout.write(`${lines.join('\n')}\n`)
  if (rows + dropped !== verified) process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
