// `npm run bench:overload`: more load than one process can serve, with and without shedding.
// The same server is started twice, with SHED_DELAY_MS=0 (never shed) and with the default;
// each time wrk opens BENCH_OVERLOAD_CONNECTIONS (default 1000) connections asking for list
// pages of 100 tokens (the dearest read) for BENCH_SECONDS (default 10), while a second client
// asks /healthz and retrieves a token, one request at a time. Printed: what the crowd got (2xx,
// 503, latency) and what the lone clients saw. BENCH_SHED_DELAYS (default `0,default`) sets
// the SHED_DELAY_MS values compared.
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const root = path.resolve(import.meta.dirname, '..')
const exec = promisify(execFile)
const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const crowd = Number(process.env.BENCH_OVERLOAD_CONNECTIONS ?? 1000)

function startServer(env) {
  const child = spawn(process.execPath, [path.join(root, 'dist/src/server.js')], { env })
  let out = ''
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      out += d
      const m = /Tessera is listening on (\S+)/.exec(out)
      if (m) resolve({ child, base: m[1] })
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)))
  })
}

function get(agent, url) {
  return new Promise((resolve) => {
    const started = performance.now()
    const req = request(url, { agent }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }))
    })
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }))
    req.end()
  })
}

/** One request at a time to `url` until `until`: the latency a lone client sees. */
async function lone(agent, url, until) {
  const seen = []
  while (performance.now() < until) seen.push(await get(agent, url))
  return seen
}

const pct = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN
}

async function wrk(url) {
  const { stdout } = await exec('wrk', ['-t2', `-c${crowd}`, `-d${seconds}s`, '--latency', url], {
    maxBuffer: 1 << 20,
  })
  const toMs = (v, unit) => Number(v) * { us: 0.001, ms: 1, s: 1000 }[unit]
  const p = (q) => {
    const m = new RegExp(`^\\s+${q}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(stdout)
    return m ? toMs(m[1], m[2]) : Number.NaN
  }
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1])
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0)
  return { requests, ok: requests - non2xx, refused: non2xx, p50: p(50), p99: p(99) }
}

async function scenario(shedDelayMs) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-overload-'))
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    ...(shedDelayMs === undefined ? {} : { SHED_DELAY_MS: String(shedDelayMs) }),
  }
  const cli = async (...args) =>
    JSON.parse(
      (await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], { env })).stdout,
    )
  await cli('account', 'create', 'crowd')
  const sk = (
    await cli('token', 'create', 'crowd', '--scopes', 'tokens:read,tokens:write', '--note', 'test')
  ).token
  const server = await startServer(env)
  try {
    const agent = new Agent({
      keepAlive: true,
      ca: readFileSync(path.join(dataDir, 'tls', 'cert.pem')),
    })
    for (let i = 0; i < 99; i++) {
      await new Promise((resolve) => {
        const req = request(
          `${server.base}/tokens/v2/crowd?access_token=${sk}`,
          { method: 'POST', agent },
          (res) => res.resume().on('end', resolve),
        )
        req.end(JSON.stringify({ note: `t${i}` }))
      })
    }
    const until = performance.now() + seconds * 1000
    const [load, health, retrieve] = await Promise.all([
      wrk(`${server.base}/tokens/v2/crowd?limit=100&access_token=${sk}`),
      lone(agent, `${server.base}/healthz`, until),
      lone(
        new Agent({ keepAlive: true, ca: agent.options.ca }),
        `${server.base}/tokens/v2?access_token=${sk}`,
        until,
      ),
    ])
    const answered = (xs) => xs.filter((x) => x.status === 200)
    return {
      shedding: shedDelayMs === 0 ? 'off' : `SHED_DELAY_MS=${shedDelayMs ?? 'default (200)'}`,
      ...load,
      healthP99: pct(
        answered(health).map((x) => x.ms),
        0.99,
      ),
      healthFailed: health.length - answered(health).length,
      retrieveOk: answered(retrieve).length,
      retrieveShed: retrieve.filter((x) => x.status === 503).length,
      retrieveP99: pct(
        retrieve.map((x) => x.ms),
        0.99,
      ),
    }
  } finally {
    server.child.kill('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-')
const rows = []
// BENCH_SHED_DELAYS: the SHED_DELAY_MS values to compare; `default` is the server's own.
const delays = (process.env.BENCH_SHED_DELAYS ?? '0,default')
  .split(',')
  .map((d) => (d === 'default' ? undefined : Number(d)))
for (const delay of delays) {
  process.stdout.write(`  SHED_DELAY_MS=${delay ?? 'default'}...\n`)
  rows.push(await scenario(delay))
}
process.stdout.write(
  [
    '',
    `Overload: ${crowd} connections asking for list pages of 100 tokens, ${seconds} s, wrk`,
    '',
    '| shedding | crowd answered 200 | crowd answered 503 | crowd p50 ms | crowd p99 ms | lone /healthz p99 ms | lone retrieves: 200 / 503, p99 ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.shedding} | ${r.ok} | ${r.refused} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.healthP99, 1)}${r.healthFailed ? ` (${r.healthFailed} failed)` : ''} | ${r.retrieveOk} / ${r.retrieveShed}, ${fmt(r.retrieveP99, 1)} |`,
    ),
    '',
  ].join('\n'),
)
