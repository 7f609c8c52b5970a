// `npm run bench:instructions`: instructions per request, counted by valgrind's callgrind.
// Unlike req/s on a shared machine, a count does not move with what else the machine is doing.
// Each server runs under callgrind twice, answering N1 and then N2 requests (autocannon, 10
// keep-alive connections); (I2 - I1) / (N2 - N1) leaves out start-up and the warm-up. Fewer
// than 10,000 requests leave the JIT compiler busy in the window. About 10 minutes.
// Knobs: BENCH_N1, BENCH_N2; BENCH_ONLY=retrieve (rows whose name contains any of its
// comma-separated words; nothing is written to bench/results then); BENCH_CONNECTIONS (10);
// BENCH_NODE_FLAGS, given to the servers' node (`--single-threaded` keeps V8's compiler and
// collector threads from running in the window at times that depend on the machine). SQLite only; needs valgrind
// (Debian package `valgrind`).
import { execFile, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const root = path.resolve(import.meta.dirname, '..')
const exec = promisify(execFile)
const require = createRequire(import.meta.url)
const n1 = Number(process.env.BENCH_N1 ?? 10_000)
const n2 = Number(process.env.BENCH_N2 ?? 30_000)
const connections = process.env.BENCH_CONNECTIONS ?? '10'
const nodeFlags = process.env.BENCH_NODE_FLAGS?.split(' ').filter((f) => f !== '') ?? []
const only = process.env.BENCH_ONLY?.split(',').filter((w) => w !== '')

/** Starts `args` under callgrind and waits for `pattern` in its output. */
function underCallgrind(outDir, args, env, pattern) {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${path.join(outDir, 'callgrind.%p')}`,
      process.execPath,
      ...nodeFlags,
      ...args,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      out += d
      const m = pattern.exec(out)
      if (m) resolve({ child, match: m })
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('error', reject)
    child.on('exit', (code) =>
      reject(new Error(`exited with ${code} before it was ready:\n${out}`)),
    )
  })
}

/** Total instructions of one run of a server that answered `count` requests of `load`. */
async function countRun(server, load, count) {
  const outDir = mkdtempSync(path.join(tmpdir(), 'tessera-callgrind-'))
  let child
  try {
    const started = await underCallgrind(outDir, server.args, server.env, server.ready)
    child = started.child
    const url = `${server.origin(started.match)}${load.route}`
    // A generous timeout: under callgrind a request may take seconds (a WAL checkpoint).
    const args = [require.resolve('autocannon/autocannon.js'), '-j', '-c', connections, '-t', '120']
    args.push('-a', count)
    if (load.method) args.push('-m', load.method, '-H', 'content-type=application/json')
    if (load.body) args.push('-b', load.body)
    const { stdout } = await exec(process.execPath, [...args, url], {
      env: { ...process.env, NODE_TLS_REJECT_UNAUTHORIZED: '0' }, // loopback, our own certificate
      maxBuffer: 1 << 24,
    })
    const result = JSON.parse(stdout.slice(stdout.indexOf('{')))
    if (result.non2xx > 0 || result.errors > 0) {
      const { non2xx, errors, timeouts } = result
      throw new Error(`${url}: ${JSON.stringify({ non2xx, errors, timeouts })}`)
    }
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGINT')
    await exited
    const file = readdirSync(outDir).find((f) => f.startsWith('callgrind.'))
    const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(path.join(outDir, file), 'utf8'))
    return Number(totals[1])
  } finally {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
    }
    rmSync(outDir, { recursive: true, force: true })
  }
}

async function perRequest(server, load) {
  const first = await countRun(server, load, n1)
  const second = await countRun(server, load, n2)
  return (second - first) / (n2 - n1)
}

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
  delete env.DATABASE_URL
  delete env.REDIS_URL
  try {
    const cli = async (...args) =>
      JSON.parse(
        (await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], { env }))
          .stdout,
      )
    await cli('account', 'create', 'bench')
    const sk = (await cli('token', 'create', 'bench', '--scopes', 'tokens:write,styles:read')).token
    const pk = (await cli('token', 'create', 'bench', '--scopes', 'styles:read')).token

    // One plain start: makes the TLS certificate, and a temporary token over the API.
    const serverArgs = [path.join(root, 'dist/src/server.js')]
    const ready = /listening on (\S+)/
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
    plain.kill('SIGTERM')
    if (typeof tk !== 'string') throw new Error('could not create a temporary token')

    const service = { args: serverArgs, env, ready, origin: (m) => m[1] }
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
    })
    const body = JSON.stringify({ note: 'bench', scopes: ['styles:read'] })
    // Every ratio is to the floor with the 103-byte body; a floor with the body size of tk
    // (173) or create (290) counts within 2% of it.
    const floorName = 'floor (GET, 103-byte body)'
    const all = [
      { name: floorName, server: floor(), load: { route: '/floor/103' } },
      {
        name: 'floor + the 5 headers the contract requires',
        server: floor(['headers']),
        load: { route: '/floor/103' },
      },
      { name: 'retrieve pk', server: service, load: { route: `/tokens/v2?access_token=${pk}` } },
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
    const rows = only ? all.filter((r) => only.some((w) => r.name.includes(w))) : all
    process.stdout.write(`Instructions per request (callgrind), ${n1} and ${n2} requests\n`)
    for (const row of rows) {
      row.instructions = Math.round(await perRequest(row.server, row.load))
      row.ratio = rows[0].name === floorName ? rows[0].instructions / row.instructions : Number.NaN
      process.stdout.write(`  ${row.name}: ${row.instructions}\n`)
    }
    const lines = [
      '',
      '| server and request | instructions / request | ratio to the floor |',
      '| --- | ---: | ---: |',
      ...rows.map((r) => `| ${r.name} | ${r.instructions} | ${r.ratio.toFixed(2)} |`),
    ]
    process.stdout.write(`${lines.join('\n')}\n`)
    if (only) return
    const dir = path.join(root, 'bench/results')
    mkdirSync(dir, { recursive: true })
    const result = {
      kind: 'instructions-sqlite',
      at: new Date().toISOString(),
      n1,
      n2,
      rows: rows.map(({ name, instructions, ratio }) => ({ name, instructions, ratio })),
    }
    writeFileSync(
      path.join(dir, 'instructions-latest.json'),
      `${JSON.stringify(result, null, 2)}\n`,
    )
    process.stdout.write('written to bench/results/instructions-latest.json\n')
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err.stack}\n`)
  process.exitCode = 1
})
