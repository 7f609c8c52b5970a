// `npm run bench [-- --scale]`: Tessera's production build against the Fastify floor and a raw
// node:https floor (bench/floor.js raw: no framework, the same body and headers).
// See docs/performance.md. Knobs: BENCH_SECONDS, BENCH_ROUNDS, BENCH_CONNECTIONS;
// DATABASE_URL / REDIS_URL add a service on PostgreSQL / Redis beside SQLite's, measured in the
// same rounds (--scale and the verifier alone then run on PostgreSQL only); BENCH_METRICS=1 turns on
// the Prometheus listener (METRICS_PORT); BENCH_ONLY=<text> keeps the scenarios naming it
// (BENCH_ONLY=verifier: the verifier scenario alone, see bench/verifier.js); BENCH_EACH=1 prints
// every run (req/s, CPU µs a request, ratio) as it ends. `--workers N` (BENCH_WORKERS=N), with
// `--plain` (BENCH_PLAIN=1) for plain HTTP behind a proxy: WORKERS=N against one process and
// the floor in as many processes, see bench/workers.js.
import { execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { api, dropSchema } from './api.js'
import { generator, load } from './load.js'
import { benchVerifier } from './verifier.js'

const root = path.resolve(import.meta.dirname, '..')
const scale = process.argv.includes('--scale')
/** `--workers N` or `--workers=N`; 0 without. */
const workers = (() => {
  const at = process.argv.findIndex((a) => a === '--workers' || a.startsWith('--workers='))
  const value =
    at < 0 ? process.env.BENCH_WORKERS : (process.argv[at].split('=')[1] ?? process.argv[at + 1])
  if (at < 0 && (value === undefined || value === '')) return 0
  return Number(value ?? Number.NaN)
})()
const plain = process.argv.includes('--plain') || process.env.BENCH_PLAIN === '1'
const seconds = Number(process.env.BENCH_SECONDS ?? 4)
const rounds = Number(process.env.BENCH_ROUNDS ?? (workers ? 9 : 3))
// With workers, enough connections to keep every worker busy: at 10, two workers on this 2-core
// machine wait on the generator's round trips (docs/performance.md, "Workers: measured throughput").
const connections = Number(process.env.BENCH_CONNECTIONS ?? (workers ? 64 : 10))
const metricsOn = process.env.BENCH_METRICS === '1'
const only = process.env.BENCH_ONLY
const each = process.env.BENCH_EACH === '1'
const exec = promisify(execFile)
const verifierKey = randomBytes(32).toString('base64url')

/** Starts a node script and waits for `pattern` in its output; resolves to {child, match}. */
function start(script, args, env, pattern) {
  const child = spawn(process.execPath, [script, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      out += d
      const m = pattern.exec(out)
      if (m) resolve({ child, match: m, output: () => out })
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}:\n${out}`)))
  })
}

/** CPU time (user + system) a process has used, in microseconds, from /proc. */
const cpuUs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
}

/**
 * CPU time of every process of this machine named `name`, in microseconds: `postgres` (every
 * backend of every client, and the server's own writers) or `redis-server`. A process that ends
 * during a run takes its time with it; the servers' pools keep theirs open.
 */
const cpuOfAll = (name) => {
  let sum = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const close = stat.lastIndexOf(')')
      if (stat.slice(stat.indexOf('(') + 1, close) !== name) continue
      const fields = stat.slice(close + 2).split(' ')
      sum += ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
    } catch {
      // Gone between the listing and the read.
    }
  }
  return sum
}

/**
 * Runs a load and adds the server's CPU microseconds per request (independent of the
 * generator) and, for a service on PostgreSQL and Redis, theirs: on this machine nothing else
 * uses them while the bench runs.
 */
async function measured(pid, run, servers = false) {
  const before = cpuUs(pid)
  const pgBefore = servers ? cpuOfAll('postgres') : 0
  const redisBefore = servers ? cpuOfAll('redis-server') : 0
  const result = await run()
  const cpu = { cpuUs: (cpuUs(pid) - before) / result.requests }
  if (servers) {
    cpu.postgresCpuUs = (cpuOfAll('postgres') - pgBefore) / result.requests
    cpu.redisCpuUs = (cpuOfAll('redis-server') - redisBefore) / result.requests
  }
  return { ...result, ...cpu }
}

const rss = (pid) => {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Math.round(Number(kb) / 1024)
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-')

/** The environment of one service under test; DATABASE_URL/REDIS_URL kept only for `dialect`. */
function serviceEnv(dialect) {
  const env = {
    ...process.env,
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'tessera-bench-')),
    HOST: '127.0.0.1',
    PORT: '0',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
    ...(metricsOn ? { METRICS_PORT: '0' } : {}),
    // The verifier scenario's operator key, of the verifier scope as a verifier's should be.
    ADMIN_KEYS: `bench@verifier:${verifierKey}`,
  }
  if (dialect === 'sqlite') {
    delete env.DATABASE_URL
    delete env.REDIS_URL
  }
  // On PostgreSQL and Redis, each run works in a schema and key prefix of its own.
  const run = `${process.pid}_${Date.now()}`
  if (env.DATABASE_URL && !env.DATABASE_SCHEMA) env.DATABASE_SCHEMA = `tessera_bench_${run}`
  if (env.REDIS_URL && !env.REDIS_KEY_PREFIX) env.REDIS_KEY_PREFIX = `tessera-bench-${run}:`
  return env
}

const label = (env) =>
  `${env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}${env.REDIS_URL ? ' + Redis' : ''}`

/** Starts one service (SQLite, or PostgreSQL + Redis) with an account, tokens and 100 more. */
async function startTarget(dialect) {
  const env = serviceEnv(dialect)
  const tessera = async (...args) =>
    JSON.parse(
      (await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], { env })).stdout,
    )
  await tessera('account', 'create', 'bench')
  const sk = await tessera(
    'token',
    'create',
    'bench',
    '--scopes',
    'tokens:read,tokens:write,scopes:list,styles:read',
    '--note',
    'test',
  )
  const pk = await tessera(
    'token',
    'create',
    'bench',
    '--scopes',
    'styles:read,fonts:read',
    '--note',
    'test',
  )
  let bigToken
  if (scale) {
    await fillScale(env)
    bigToken = (
      await tessera('token', 'create', 'big', '--scopes', 'tokens:read', '--note', 'test')
    ).token
  }
  const service = await start(
    path.join(root, 'dist/src/server.js'),
    [],
    env,
    /Tessera is listening on (\S+)/,
  )
  const base = service.match[1]
  const ca = readFileSync(path.join(env.DATA_DIR, 'tls', 'cert.pem'))
  const target = { dialect, env, service, base, ca, sk, pk, bigToken }
  const expires = new Date(Date.now() + 3_600_000 - 60_000).toISOString()
  target.tk = (
    await api(base, ca, 'POST', `/tokens/v2/bench?access_token=${sk.token}`, {
      expires,
      scopes: ['styles:read'],
    })
  ).body
  for (let i = 0; i < 100; i++) {
    await api(base, ca, 'POST', `/tokens/v2/bench?access_token=${sk.token}`, {
      note: `t${i}`,
      scopes: ['styles:read'],
    })
  }
  return target
}

async function stopTarget(target) {
  target.service.child.kill('SIGTERM')
  rmSync(target.env.DATA_DIR, { recursive: true, force: true })
  if (target.env.DATABASE_SCHEMA?.startsWith('tessera_bench_')) await dropSchema(target.env)
}

const scenariosOf = (t) => {
  const createBody = JSON.stringify({ note: 'bench', scopes: ['styles:read'] })
  const all = [
    { name: 'retrieve pk', route: `/tokens/v2?access_token=${t.pk.token}` },
    { name: 'retrieve sk', route: `/tokens/v2?access_token=${t.sk.token}` },
    { name: 'retrieve tk', route: `/tokens/v2?access_token=${t.tk.token}` },
    { name: 'retrieve malformed', route: '/tokens/v2?access_token=not-a-token' },
    { name: 'list (limit 100)', route: `/tokens/v2/bench?limit=100&access_token=${t.sk.token}` },
    {
      name: 'create',
      route: `/tokens/v2/bench?access_token=${t.sk.token}`,
      method: 'POST',
      body: createBody,
    },
    { name: 'list scopes', route: `/scopes/v1/bench?access_token=${t.sk.token}` },
  ]
  return all.filter((s) => only === undefined || s.name.includes(only))
}

/**
 * SQLite always; with DATABASE_URL (and REDIS_URL) PostgreSQL + Redis as well, in the same run:
 * each round loads the floor and then each service with the same scenario, so that both ratios
 * are taken against the same floor at nearly the same moment.
 */
async function main() {
  const fleet = Boolean(process.env.DATABASE_URL)
  const targets = []
  let floor
  let rawFloor
  try {
    // --scale and the verifier alone run on one service: the fleet's when DATABASE_URL is set.
    const alone = scale || only === 'verifier'
    const dialects = !fleet ? ['sqlite'] : alone ? ['postgres'] : ['sqlite', 'postgres']
    for (const dialect of dialects) targets.push(await startTarget(dialect))
    const first = targets[0]
    const certFile = path.join(first.env.DATA_DIR, 'tls', 'cert.pem')
    floor = await start(
      path.join(root, 'bench/floor.js'),
      [certFile, path.join(first.env.DATA_DIR, 'tls', 'key.pem'), '0'],
      process.env,
      /floor ready (\d+)/,
    )
    const floorBase = `https://127.0.0.1:${floor.match[1]}`
    // The second floor: node:https alone, the least a Node process can do per request.
    rawFloor = await start(
      path.join(root, 'bench/floor.js'),
      [certFile, path.join(first.env.DATA_DIR, 'tls', 'key.pem'), '0', 'raw'],
      process.env,
      /floor ready (\d+)/,
    )
    const rawBase = `https://127.0.0.1:${rawFloor.match[1]}`
    const last = targets[targets.length - 1]
    if (scale) {
      const pages = await runScale({ base: first.base, ca: first.ca, bigToken: first.bigToken })
      const small = {
        name: 'about 100 tokens, first page',
        route: `/tokens/v2/bench?limit=100&access_token=${first.sk.token}`,
      }
      return await scaleReport({
        base: first.base,
        ca: first.ca,
        pages,
        small,
        service: first.service,
        pk: first.pk,
        env: first.env,
      })
    }
    const verifierScenario = async () =>
      save(
        await benchVerifier({
          base: last.base,
          ca: last.ca,
          adminKey: verifierKey,
          api: (method, body) =>
            api(last.base, last.ca, method, `/tokens/v2/bench?access_token=${last.sk.token}`, body),
        }),
      )
    if (only === 'verifier') return await verifierScenario()
    const logScenario = async () => {
      const { benchLog } = await import('./log-cost.js')
      await benchLog({ root, start, serviceEnv, save, seconds, rounds, connections })
    }
    if (only === 'log') return await logScenario()

    for (const t of targets) {
      t.scenarios = scenariosOf(t)
      for (const s of t.scenarios) {
        const res = await api(
          t.base,
          t.ca,
          s.method ?? 'GET',
          s.route,
          s.body && JSON.parse(s.body),
        )
        if (res.status !== 200) throw new Error(`${s.name}: ${res.status} ${res.text}`)
        s.size = Buffer.byteLength(res.text)
        s.floor = []
        s.raw = []
        s.service = []
      }
    }
    const names = first.scenarios.map((s) => s.name)
    const loadService = (t, s) => load({ ...loadOf(t, s), seconds })
    // Warm-up: let every server's JIT settle before anything is measured.
    for (const [i] of names.entries()) {
      await load({ url: `${floorBase}/floor/${first.scenarios[i].size}`, connections, seconds: 1 })
      await load({ url: `${rawBase}/floor/${first.scenarios[i].size}`, connections, seconds: 1 })
      for (const t of targets) await load({ ...loadOf(t, t.scenarios[i]), seconds: 1 })
    }
    for (const t of targets) t.rssStart = rss(t.service.child.pid)
    process.stdout.write(
      `Tessera benchmark: ${generator}, ${connections} connections, ${seconds} s x ${rounds} rounds, ` +
        `${cpus().length} CPUs, ${targets.map((t) => label(t.env)).join(' and ')}` +
        `${metricsOn ? ', metrics on' : ''}\n`,
    )
    for (let round = 1; round <= rounds; round++) {
      for (const [i, name] of names.entries()) {
        // The services take turns going first: no one always follows the other's load.
        for (const t of round % 2 === 1 ? targets : [...targets].reverse()) {
          const s = t.scenarios[i]
          // Each service's ratio against a floor run just before it, with its body size.
          s.floor.push(
            await measured(floor.child.pid, () =>
              load({ url: `${floorBase}/floor/${s.size}`, connections, seconds }),
            ),
          )
          s.raw.push(
            await measured(rawFloor.child.pid, () =>
              load({ url: `${rawBase}/floor/${s.size}`, connections, seconds }),
            ),
          )
          const servers = t.env.DATABASE_URL !== undefined
          s.service.push(await measured(t.service.child.pid, () => loadService(t, s), servers))
          if (each) {
            const [f, r] = [s.floor.at(-1), s.service.at(-1)]
            process.stdout.write(
              `    ${label(t.env)}: floor ${fmt(f.rps)} req/s, ${fmt(f.cpuUs, 1)} µs; ` +
                `service ${fmt(r.rps)} req/s, ${fmt(r.cpuUs, 1)} µs (${fmt(r.rps / f.rps, 2)})` +
                (r.postgresCpuUs === undefined
                  ? '\n'
                  : `; PostgreSQL ${fmt(r.postgresCpuUs, 1)} µs, Redis ${fmt(r.redisCpuUs, 1)} µs\n`),
            )
          }
        }
        process.stdout.write(`  round ${round}: ${name}\n`)
      }
    }
    for (const t of targets) {
      t.table = tableOf(t.scenarios)
      t.rssEnd = rss(t.service.child.pid)
      process.stdout.write(`\n${label(t.env)}\n${report(t).join('\n')}\n`)
    }
    if (targets.length === 2) process.stdout.write(`\n${sideBySide(targets).join('\n')}\n`)
    if (targets.some((t) => t.table.some((r) => r.non2xx > 0)))
      throw new Error('some requests failed: see non2xx')
    // A partial run would replace the full figures: printed only.
    if (only !== undefined) return
    for (const t of targets) {
      save({
        kind: `http-${dialectOf(t.env)}${metricsOn ? '-metrics' : ''}`,
        generator,
        connections,
        seconds,
        rounds,
        rssStart: t.rssStart,
        rssEnd: t.rssEnd,
        table: t.table,
      })
    }
    await verifierScenario()
    if (only === undefined) await logScenario()
  } finally {
    floor?.child.kill('SIGTERM')
    rawFloor?.child.kill('SIGTERM')
    for (const t of targets) await stopTarget(t)
  }
}

const loadOf = (t, s) => ({
  url: `${t.base}${s.route}`,
  method: s.method,
  body: s.body,
  connections,
})

const spread = (xs) => `${fmt(Math.min(...xs), 2)}-${fmt(Math.max(...xs), 2)}`

function tableOf(scenarios) {
  return scenarios.map((s) => {
    const ratios = s.service.map((r, i) => r.rps / s.floor[i].rps)
    const rawRatios = s.service.map((r, i) => r.rps / s.raw[i].rps)
    return {
      scenario: s.name,
      bytes: s.size,
      floorRps: median(s.floor.map((r) => r.rps)),
      rps: median(s.service.map((r) => r.rps)),
      p50: median(s.service.map((r) => r.p50)),
      p99: median(s.service.map((r) => r.p99)),
      floorP50: median(s.floor.map((r) => r.p50)),
      ratio: median(ratios),
      ratios,
      rawRps: median(s.raw.map((r) => r.rps)),
      rawRatio: median(rawRatios),
      rawRatios,
      rawCpuUs: median(s.raw.map((r) => r.cpuUs)),
      floorCpuUs: median(s.floor.map((r) => r.cpuUs)),
      cpuUs: median(s.service.map((r) => r.cpuUs)),
      ...(s.service[0]?.postgresCpuUs === undefined
        ? {}
        : {
            postgresCpuUs: median(s.service.map((r) => r.postgresCpuUs)),
            redisCpuUs: median(s.service.map((r) => r.redisCpuUs)),
          }),
      non2xx: s.service.reduce((n, r) => n + r.non2xx, 0),
    }
  })
}

function report(t) {
  const servers = t.table[0]?.postgresCpuUs !== undefined
  const head = servers ? ' PostgreSQL CPU µs/req | Redis CPU µs/req |' : ''
  return [
    `| scenario | bytes | floor req/s | req/s | ratio | ratio range | raw floor req/s | raw ratio | raw ratio range | p50 ms | p99 ms | floor p50 ms | floor CPU µs/req | raw floor CPU µs/req | CPU µs/req |${head}`,
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${servers ? ' ---: | ---: |' : ''}`,
    ...t.table.map(
      (r) =>
        `| ${r.scenario} | ${r.bytes} | ${fmt(r.floorRps)} | ${fmt(r.rps)} | ${fmt(r.ratio, 2)} | ${spread(r.ratios)} | ${fmt(r.rawRps)} | ${fmt(r.rawRatio, 2)} | ${spread(r.rawRatios)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.floorP50, 2)} | ${fmt(r.floorCpuUs, 1)} | ${fmt(r.rawCpuUs, 1)} | ${fmt(r.cpuUs, 1)} |` +
        (servers ? ` ${fmt(r.postgresCpuUs, 1)} | ${fmt(r.redisCpuUs, 1)} |` : ''),
    ),
    '',
    `service RSS: ${t.rssStart} MB before the load, ${t.rssEnd} MB after`,
  ]
}

/** Both services' ratios to the floor, and the fleet's as a share of SQLite's. */
function sideBySide([sqlite, fleet]) {
  return [
    `| scenario | SQLite ratio | ${label(fleet.env)} ratio (range) | ${label(fleet.env)} / SQLite |`,
    '| --- | ---: | ---: | ---: |',
    ...sqlite.table.map((r, i) => {
      const f = fleet.table[i]
      return `| ${r.scenario} | ${fmt(r.ratio, 2)} (${spread(r.ratios)}) | ${fmt(f.ratio, 2)} (${spread(f.ratios)}) | ${fmt(f.ratio / r.ratio, 2)} |`
    }),
  ]
}

const dialectOf = (env) => (env.DATABASE_URL ? 'postgres' : 'sqlite')

function save(result) {
  const dir = path.join(root, 'bench', 'results')
  mkdirSync(dir, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const body = `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...result }, null, 2)}\n`
  writeFileSync(path.join(dir, `${result.kind}-${stamp}.json`), body)
  writeFileSync(path.join(dir, `${result.kind}-latest.json`), body)
  process.stdout.write(`written to bench/results/${result.kind}-latest.json\n`)
}

const bigCount = Number(process.env.BENCH_SCALE_TOKENS ?? 1_000_000)
const bigBase = Date.parse('2026-01-01T00:00:00.000Z')

/** Bulk-inserts `bigCount` tokens into account "big" (not over HTTP). */
async function fillScale(env) {
  const { readEnv, toConfig } = await import('../dist/src/config.js')
  const { createContext } = await import('../dist/src/context.js')
  const { tokensRepo } = await import('../dist/src/db/repositories.js')
  const ctx = await createContext(toConfig(readEnv(env)))
  try {
    const account = (await ctx.accounts.create('big', undefined, [], { type: 'cli' })).username
    const keyId = ctx.keyring.current.id
    const started = Date.now()
    const batch = 500
    for (let i = 0; i < bigCount; i += batch) {
      const rows = []
      for (let j = i; j < Math.min(i + batch, bigCount); j++)
        rows.push(bigRecord(account, keyId, j))
      await tokensRepo.insertMany(ctx.db, rows)
    }
    process.stdout.write(
      `inserted ${bigCount} tokens in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    )
  } finally {
    await ctx.close()
  }
}

const bigId = (j) => `c${String(j).padStart(24, '0')}`
function bigRecord(username, keyId, j) {
  const at = new Date(bigBase + j).toISOString()
  return {
    id: bigId(j),
    username,
    usage: 'pk',
    isDefault: false,
    note: `bulk ${j}`,
    scopes: ['styles:read'],
    allowedUrls: null,
    scopeless: false,
    keyId,
    created: at,
    modified: at,
  }
}

async function runScale({ base, ca, bigToken }) {
  const { encodeCursor } = await import('../dist/src/tokens/cursor.js')
  const cursorAt = (j) =>
    encodeCursor({
      username: 'big',
      sortby: 'created',
      at: new Date(bigBase + j).toISOString(),
      id: bigId(j),
    })
  const pages = [
    {
      name: `${bigCount} tokens, first page`,
      route: `/tokens/v2/big?limit=100&access_token=${bigToken}`,
    },
    {
      name: `${bigCount} tokens, middle page`,
      route: `/tokens/v2/big?limit=100&start=${cursorAt(Math.floor(bigCount / 2))}&access_token=${bigToken}`,
    },
    {
      name: `${bigCount} tokens, last page`,
      route: `/tokens/v2/big?limit=100&start=${cursorAt(bigCount - 101)}&access_token=${bigToken}`,
    },
  ]
  for (const p of pages) {
    const res = await api(base, ca, 'GET', p.route)
    if (res.status !== 200 || res.body.length !== 100)
      throw new Error(`${p.name}: ${res.status} ${res.text.slice(0, 200)}`)
  }
  return pages
}

async function scaleReport({ base, pages, small, service, pk, env }) {
  const all = [small, ...pages]
  for (const p of all) p.runs = []
  process.stdout.write(
    `List-page latency, 1 connection, ${seconds} s x ${rounds} rounds (${generator})\n`,
  )
  for (let round = 1; round <= rounds; round++) {
    for (const p of all) {
      p.runs.push(await load({ url: `${base}${p.route}`, connections: 1, seconds }))
    }
    process.stdout.write(`  round ${round} done\n`)
  }
  const smallP50 = median(small.runs.map((r) => r.p50))
  const table = all.map((p) => {
    const p50 = median(p.runs.map((r) => r.p50))
    return {
      page: p.name,
      rps: median(p.runs.map((r) => r.rps)),
      p50,
      p99: median(p.runs.map((r) => r.p99)),
      vsSmall: p50 / smallP50,
    }
  })

  // Resident memory while validating 1,000,000 tokens: sampled after each quarter.
  const memory = [{ validations: 0, rssMb: rss(service.child.pid) }]
  let done = 0
  const target = Number(process.env.BENCH_VALIDATIONS ?? 1_000_000)
  while (done < target) {
    const r = await load({
      url: `${base}/tokens/v2?access_token=${pk.token}`,
      connections,
      seconds: 10,
    })
    done += r.requests
    memory.push({ validations: done, rssMb: rss(service.child.pid) })
  }
  const lines = [
    '',
    '| list page | req/s | p50 ms | p99 ms | p50 vs 100 tokens |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...table.map(
      (r) =>
        `| ${r.page} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.vsSmall, 2)} |`,
    ),
    '',
    `resident memory (MB) by validations: ${memory.map((m) => `${m.validations}: ${m.rssMb}`).join(', ')}`,
  ]
  process.stdout.write(`${lines.join('\n')}\n`)
  save({
    kind: `scale-${dialectOf(env)}`,
    generator,
    tokens: bigCount,
    seconds,
    rounds,
    table,
    memory,
  })
}

/** `--workers N`: the comparison of bench/workers.js, with this file's helpers. */
async function mainWorkers() {
  if (!Number.isInteger(workers) || workers < 2)
    throw new Error(`--workers N (BENCH_WORKERS, also for --plain): N of 2 or more, not ${workers}`)
  const { benchWorkers } = await import('./workers.js')
  const o = { workers, plain, rounds, seconds, connections, each, only, root }
  await benchWorkers({ ...o, start, save, serviceEnv })
}

const run = workers !== 0 || plain ? mainWorkers : main
run().catch((err) => {
  process.stderr.write(`bench: ${err.stack}\n`)
  process.exitCode = 1
})
