// `npm run bench:instructions`: instructions per request, counted by valgrind's callgrind.
// Unlike req/s on a shared machine, a count does not move with what else the machine is doing.
// What makes it repeatable (within about 1% for a build, and between builds whose request path
// is the same):
// - Each server starts under callgrind with instrumentation off (--instr-atstart=no) and is
//   warmed up with BENCH_WARMUP requests (20,000): start-up, TLS handshakes and most JIT
//   compiling are never counted. Then callgrind_control turns counting on and dumps (zeroing the
//   counters) after each of BENCH_WINDOWS windows (5) of BENCH_N requests (3,000), all on the
//   same keep-alive connections (BENCH_CONNECTIONS, 1: one request in flight, no batching that
//   depends on timing).
// - The count is the lowest window. What differs between windows only adds: a late TurboFan
//   compile, the first run of a timer's code, a mark-compact.
// - The servers' node runs with BENCH_NODE_FLAGS, by default `--single-threaded` and a young
//   generation fixed at 16 MB (`--min-semi-space-size=16 --max-semi-space-size=16`). V8 sizes
//   the young generation from what it saw, and a process left at 1 MB scavenged nine times as
//   often (+3% a request). With concurrent compiling, some processes of the same build ended up
//   building process.nextTick's tick objects in the runtime (+29% a request) and others not.
// - Timers fire by the clock, not per request, and under callgrind the server runs ~50 times
//   slower, so they would add per request what they cost per second. An idle spell
//   (BENCH_IDLE_MS, 10 s, in 5 parts, median) measures them per second; their share of each
//   window's duration is taken out of the count and printed beside it.
// About 1.5 minutes a row. BENCH_ONLY=retrieve runs the rows whose name contains any of its
// comma-separated words (nothing is written to bench/results then); BENCH_KEEP=dir keeps each
// dump there for callgrind_annotate (with `--perf-basic-prof` among the flags, node's
// /tmp/perf-<pid>.map names the JIT code). SQLite, or with BENCH_FLEET=1 PostgreSQL + Redis
// (DATABASE_URL, REDIS_URL; printed, not written); BENCH_PRIME=N serves N creates before each
// retrieve row's warm-up. Needs valgrind (Debian package `valgrind`).
import { execFile, spawn } from 'node:child_process'
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { Agent, request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { dropSchema } from './api.js'

const root = path.resolve(import.meta.dirname, '..')
const exec = promisify(execFile)
const warmup = Number(process.env.BENCH_WARMUP ?? 20_000)
const n = Number(process.env.BENCH_N ?? 3_000)
const windowCount = Number(process.env.BENCH_WINDOWS ?? 5)
const idleSpells = 5
const idleMs = Number(process.env.BENCH_IDLE_MS ?? 10_000)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 1)
const nodeFlags = (
  process.env.BENCH_NODE_FLAGS ??
  '--single-threaded --min-semi-space-size=16 --max-semi-space-size=16'
)
  .split(' ')
  .filter((f) => f !== '')
const keep = process.env.BENCH_KEEP
const only = process.env.BENCH_ONLY?.split(',').filter((w) => w !== '')

/** Starts `args` under callgrind, counting nothing yet, and waits for `pattern` in its output. */
function underCallgrind(outDir, args, env, pattern) {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--smc-check=all-non-file',
      '--instr-atstart=no',
      `--callgrind-out-file=${path.join(outDir, 'callgrind.%p')}`,
      process.execPath,
      ...nodeFlags,
      ...args,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const state = { out: '' }
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      state.out += d
      const m = pattern.exec(state.out)
      if (m) resolve({ child, match: m, state })
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('error', reject)
    child.on('exit', (code) =>
      reject(new Error(`exited with ${code} before it was ready:\n${state.out}`)),
    )
  })
}

/** Sends `count` requests of `load` over the keep-alive connections of `agent`. */
async function send(agent, url, load, count) {
  const one = () =>
    new Promise((resolve, reject) => {
      const headers = load.body ? { 'content-type': 'application/json' } : {}
      const req = request(url, { agent, method: load.method ?? 'GET', headers }, (res) => {
        res.on('data', () => {})
        res.on('end', () =>
          res.statusCode < 300 ? resolve() : reject(new Error(`${url}: ${res.statusCode}`)),
        )
      })
      req.on('error', reject)
      req.end(load.body)
    })
  let sent = 0
  const worker = async () => {
    while (sent < count) {
      sent++
      await one()
    }
  }
  await Promise.all(Array.from({ length: agent.maxSockets }, worker))
}

/**
 * Runs callgrind_control for the server `pid`. Its environment is the server's: vgdb names the
 * pipes it talks through after $USER and $HOST, and the service's HOST is its address.
 */
const control = (pid, env, ...args) => exec('callgrind_control', [...args, String(pid)], { env })

/**
 * Asks callgrind in `pid` to dump its counters, which zeroes them: the instructions counted since
 * the last dump. With BENCH_KEEP the dump is kept there as `<name>.<i>` for callgrind_annotate.
 */
async function dump(pid, env, outDir, name) {
  const before = new Set(readdirSync(outDir))
  await control(pid, env, '-d')
  let file
  for (let waited = 0; file === undefined; waited += 100) {
    if (waited > 60_000) throw new Error(`callgrind in ${pid} wrote no dump`)
    await new Promise((resolve) => setTimeout(resolve, 100))
    file = readdirSync(outDir).find((f) => !before.has(f))
  }
  const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(path.join(outDir, file), 'utf8'))
  if (keep) {
    mkdirSync(keep, { recursive: true })
    copyFileSync(path.join(outDir, file), path.join(keep, `${name}.${file.split('.').at(-1)}`))
  }
  rmSync(path.join(outDir, file))
  return { instructions: Number(totals[1]), at: performance.now() }
}

/**
 * Counts `load` on `server`: a warm-up with instrumentation off, then, counted, an idle spell
 * (what timers cost per second) and `windowCount` windows of `n` requests each.
 */
async function measure(server, load, name) {
  const outDir = mkdtempSync(path.join(tmpdir(), 'tessera-callgrind-'))
  const agent = new Agent({ keepAlive: true, maxSockets: connections, ca: server.ca })
  let child
  try {
    const started = await underCallgrind(outDir, server.args, server.env, server.ready)
    child = started.child
    const origin = server.origin(started.match)
    const url = `${origin}${load.route}`
    if (load.prime !== undefined) {
      await send(agent, `${origin}${load.prime.route}`, load.prime, load.prime.count)
    }
    await send(agent, url, load, warmup)
    await control(child.pid, server.env, '-i', 'on')
    let last = await dump(child.pid, server.env, outDir, `${name}.on`)
    // In spells: the first run of a timer's code (parsed, compiled) lands in one of them.
    const rates = []
    for (let i = 0; i < idleSpells; i++) {
      await new Promise((resolve) => setTimeout(resolve, idleMs / idleSpells))
      const d = await dump(child.pid, server.env, outDir, `${name}.idle`)
      rates.push(d.instructions / ((d.at - last.at) / 1000))
      last = d
    }
    const idlePerSecond = median(rates)
    const windows = []
    for (let i = 0; i < windowCount; i++) {
      await send(agent, url, load, n)
      const d = await dump(child.pid, server.env, outDir, `${name}.window`)
      const timers = (idlePerSecond * (d.at - last.at)) / 1000 / n
      windows.push({ all: d.instructions / n, timers, requests: d.instructions / n - timers })
      last = d
    }
    return { idlePerSecond, windows }
  } finally {
    agent.destroy()
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      // SIGINT lets valgrind remove its vgdb pipes from /tmp; SIGKILL if it does not end.
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGINT')
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000)
      await exited
      clearTimeout(killer)
    }
    rmSync(outDir, { recursive: true, force: true })
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

function api(base, ca, method, route, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${route}`, { method, ca }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () => resolve(text && JSON.parse(text)))
    })
    req.on('error', reject)
    if (body) req.setHeader('content-type', 'application/json')
    req.end(body && JSON.stringify(body))
  })
}

async function main() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-bench-'))
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
    // Under callgrind the event loop runs tens of times slower: load shedding would answer 503.
    SHED_DELAY_MS: '0',
  }
  // BENCH_FLEET=1 counts the service on DATABASE_URL and REDIS_URL (a schema and key prefix
  // of its own) instead of SQLite; the floor rows are the same either way.
  const fleet = process.env.BENCH_FLEET === '1'
  if (fleet) {
    if (!env.DATABASE_URL || !env.REDIS_URL)
      throw new Error('BENCH_FLEET=1 needs DATABASE_URL and REDIS_URL')
    const run = `${process.pid}_${Date.now()}`
    env.DATABASE_SCHEMA = `tessera_bench_${run}`
    env.REDIS_KEY_PREFIX = `tessera-bench-${run}:`
  } else {
    delete env.DATABASE_URL
    delete env.REDIS_URL
  }
  try {
    const cli = async (...args) =>
      JSON.parse(
        (await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], { env }))
          .stdout,
      )
    await cli('account', 'create', 'bench')
    const sk = (
      await cli(
        'token',
        'create',
        'bench',
        '--scopes',
        'tokens:write,styles:read',
        '--note',
        'test',
      )
    ).token
    const pk = (await cli('token', 'create', 'bench', '--scopes', 'styles:read', '--note', 'test'))
      .token

    // One plain start: makes the TLS certificate, and a temporary token over the API.
    const serverArgs = [path.join(root, 'dist/src/server.js')]
    const ready = /Tessera is listening on (\S+)/
    const plain = spawn(process.execPath, serverArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    const base = await new Promise((resolve, reject) => {
      let out = ''
      plain.stdout.on('data', (d) => {
        out += d
        const m = ready.exec(out)
        if (m) resolve(m[1])
      })
      plain.on('exit', () => reject(new Error(`the server did not start:\n${out}`)))
    })
    const certFile = path.join(dataDir, 'tls', 'cert.pem')
    const expires = new Date(Date.now() + 3_600_000 - 600_000).toISOString()
    const tk = (
      await api(base, readFileSync(certFile), 'POST', `/tokens/v2/bench?access_token=${sk}`, {
        expires,
        scopes: ['styles:read'],
      })
    ).token
    // A pk with 3 named limits of its own (never reached): 4 limits a retrieve, with `requests`.
    const limited = (
      await api(base, readFileSync(certFile), 'POST', `/tokens/v2/bench?access_token=${sk}`, {
        scopes: ['styles:read'],
        ratelimits: [
          { name: 'burst', limit: 1_000_000_000, duration: 1000 },
          { name: 'minute', limit: 1_000_000_000, duration: 60_000 },
          { name: 'hour', limit: 1_000_000_000, duration: 3_600_000 },
        ],
      })
    ).token
    plain.kill('SIGTERM')
    if (typeof tk !== 'string') throw new Error('could not create a temporary token')
    if (typeof limited !== 'string') throw new Error('could not create a pk with limits')

    const ca = readFileSync(certFile)
    const service = { args: serverArgs, env, ready, origin: (m) => m[1], ca }
    const floor = (extra = []) => ({
      args: [
        path.join(root, 'bench/floor.js'),
        certFile,
        path.join(dataDir, 'tls', 'key.pem'),
        '0',
        ...extra,
      ],
      env: process.env,
      ready: /floor ready (\d+)/,
      origin: (m) => `https://127.0.0.1:${m[1]}`,
      ca,
    })
    const body = JSON.stringify({ note: 'bench', scopes: ['styles:read'] })
    // Every ratio is to the floor with the 103-byte body; a floor with the body size of tk
    // (173) or create (290) counts within 2% of it.
    const floorName = 'floor (GET, 103-byte body)'
    const all = [
      { name: floorName, server: floor(), load: { route: '/floor/103' } },
      {
        name: 'floor + the 9 headers Tessera sends',
        server: floor(['headers']),
        load: { route: '/floor/103' },
      },
      {
        name: 'raw floor (node:https alone, the same body and 9 headers)',
        server: floor(['raw']),
        load: { route: '/floor/103' },
      },
      { name: 'retrieve pk', server: service, load: { route: `/tokens/v2?access_token=${pk}` } },
      {
        name: 'retrieve pk, 3 named limits',
        server: service,
        load: { route: `/tokens/v2?access_token=${limited}` },
      },
      {
        name: 'retrieve malformed',
        server: service,
        load: { route: '/tokens/v2?access_token=not-a-token' },
      },
      { name: 'retrieve tk', server: service, load: { route: `/tokens/v2?access_token=${tk}` } },
      {
        name: 'create',
        server: service,
        load: { route: `/tokens/v2/bench?access_token=${sk}`, method: 'POST', body },
      },
    ]
    // BENCH_PRIME=N: N creates before each retrieve row's warm-up, as a running service has
    // served them (what they leave in the JIT's type feedback is then counted).
    const prime = Number(process.env.BENCH_PRIME ?? 0)
    if (prime > 0) {
      for (const row of all.filter((r) => r.name.startsWith('retrieve'))) {
        row.name = `${row.name}, after ${prime} creates`
        row.load.prime = { ...all.at(-1).load, count: prime }
      }
    }
    const rows = only ? all.filter((r) => only.some((w) => r.name.includes(w))) : all
    process.stdout.write(
      `Instructions per request (callgrind), lowest of ${windowCount} windows of ${n} after ` +
        `${warmup}; node ${nodeFlags.join(' ')}; ${fleet ? 'PostgreSQL + Redis' : 'SQLite'}\n`,
    )
    for (const row of rows) {
      const m = await measure(row.server, row.load, row.name.replace(/\W+/g, '-'))
      row.instructions = Math.round(Math.min(...m.windows.map((w) => w.requests)))
      row.windows = m.windows.map((w) => Math.round(w.requests))
      row.timersPerSecond = Math.round(m.idlePerSecond)
      const timers = Math.round(median(m.windows.map((w) => w.timers)))
      process.stdout.write(
        `  ${row.name}: ${row.instructions} (windows ${row.windows.join(', ')}; timers ` +
          `${row.timersPerSecond}/s, ${timers} a request at callgrind's pace, not counted)\n`,
      )
      row.ratio = rows[0].name === floorName ? rows[0].instructions / row.instructions : Number.NaN
    }
    const lines = [
      '',
      '| server and request | instructions / request | ratio to the floor |',
      '| --- | ---: | ---: |',
      ...rows.map((r) => `| ${r.name} | ${r.instructions} | ${r.ratio.toFixed(2)} |`),
    ]
    process.stdout.write(`${lines.join('\n')}\n`)
    if (only || fleet) return
    const dir = path.join(root, 'bench/results')
    mkdirSync(dir, { recursive: true })
    const result = {
      kind: 'instructions-sqlite',
      at: new Date().toISOString(),
      warmup,
      n,
      windows: windowCount,
      connections,
      nodeFlags,
      rows: rows.map(({ name, instructions, ratio, windows, timersPerSecond }) => ({
        name,
        instructions,
        ratio,
        windows,
        timersPerSecond,
      })),
    }
    writeFileSync(
      path.join(dir, 'instructions-latest.json'),
      `${JSON.stringify(result, null, 2)}\n`,
    )
    process.stdout.write('written to bench/results/instructions-latest.json\n')
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
    if (fleet) await dropSchema(env)
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err.stack}\n`)
  process.exitCode = 1
})
