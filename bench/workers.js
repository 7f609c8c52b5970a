// `npm run bench -- --workers N [--plain]` (BENCH_WORKERS=N, BENCH_PLAIN=1): what N worker
// processes give on one machine, like for like. Every round loads a pk retrieve on four targets,
// the order turned around each round: the floor in one process and in N (node:cluster), Tessera
// with WORKERS unset and with WORKERS=N; CPU time is that of each one's whole process tree.
// --plain: plain HTTP as behind a TLS-terminating proxy (TRUST_PROXY=1, `X-Forwarded-Proto:
// https`), so that the generator's own TLS work does not take a core the workers would need.
// 64 connections and 9 rounds of 4 s unless BENCH_CONNECTIONS, BENCH_ROUNDS, BENCH_SECONDS say
// otherwise: a throughput figure needs the workers fully loaded, and the median of 9 paired rounds
// holds steady where the rounds themselves move by a third on a shared machine.
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { cpus, loadavg } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { generator, load } from './load.js'

const exec = promisify(execFile)

/** Every process's parent and CPU time (user + system) in microseconds, from /proc. */
function processes() {
  const all = new Map()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const cpuUs = ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
      all.set(Number(pid), { parent: Number(fields[1]), cpuUs })
    } catch {
      // Gone between the listing and the read.
    }
  }
  return all
}

/** A process and all its descendants. */
function tree(pid, all = processes()) {
  const pids = [pid]
  for (let i = 0; i < pids.length; i++) {
    for (const [child, p] of all) if (p.parent === pids[i]) pids.push(child)
  }
  return pids
}

/**
 * CPU time of a process tree, in microseconds. A process that ended takes its time with it (a
 * worker replaced during a run would show as a drop in req/s anyway).
 */
function treeCpuUs(pid) {
  const all = processes()
  return tree(pid, all).reduce((sum, p) => sum + (all.get(p)?.cpuUs ?? 0), 0)
}

/**
 * CPU time the whole machine spent busy (steal included: a neighbour's share on a shared host),
 * in microseconds, from /proc/stat: what is not the target's or the generator's was taken by
 * something else during the run.
 */
function machineBusyUs() {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .split(/\s+/)
    .slice(1)
    .map(Number)
  return ((user + nice + system + irq + softirq + steal) * 1e6) / 100
}

/** One GET through Node's client, trusting the service's certificate: {status, text}. */
function get(url, ca, headers) {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers }, async (res) => {
      let text = ''
      for await (const d of res) text += d
      resolve({ status: res.statusCode, text })
    })
    req.on('error', reject).end()
  })
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-')
const range = (xs, d = 2) => `${fmt(Math.min(...xs), d)}-${fmt(Math.max(...xs), d)}`

/**
 * Runs the comparison and prints it; `o` carries the run's knobs (workers, plain, rounds,
 * seconds, connections, each, only, root) and bench.js's helpers (start, save, serviceEnv).
 */
export async function benchWorkers(o) {
  const started = []
  const keep = async (target) => {
    started.push(await target)
    return started.at(-1)
  }
  try {
    const tessera1 = await keep(startTessera(o, 1))
    const tesseraN = await keep(startTessera(o, o.workers))
    for (const t of [tessera1, tesseraN]) await probe(o, t)
    const tls = o.plain ? ['-', '-'] : ['cert.pem', 'key.pem'].map((f) => tlsFile(tessera1, f))
    const floorArgs = [...tls, '0', ...(o.plain ? ['plain'] : [])]
    const floor1 = await keep(startFloor(o, 1, floorArgs, tessera1.size))
    const floorN = await keep(startFloor(o, o.workers, floorArgs, tessera1.size))
    const targets = [floor1, floorN, tessera1, tesseraN]
    for (const t of targets) checkProcesses(t)
    return await compare(o, targets)
  } finally {
    for (const t of started) await stop(t)
  }
}

/** The floor in one process or with n workers, answering a body of `size` bytes. */
async function startFloor(o, n, args, size) {
  const floor = await o.start(
    path.join(o.root, 'bench/floor.js'),
    n === 1 ? args : [...args, `workers=${n}`],
    process.env,
    /floor ready (\d+)/,
  )
  return {
    name: n === 1 ? 'floor, 1 process' : `floor, ${n} workers`,
    processes: n,
    child: floor.child,
    runs: [],
    url: `${o.plain ? 'http' : 'https'}://127.0.0.1:${floor.match[1]}/floor/${size}`,
  }
}

const tlsFile = (t, name) => path.join(t.env.DATA_DIR, 'tls', name)

/** Tessera on SQLite with an account and a pk; WORKERS=n when n > 1, unset otherwise. */
async function startTessera(o, n) {
  const env = o.serviceEnv('sqlite')
  delete env.WORKERS
  delete env.TRUST_PROXY
  if (n > 1) env.WORKERS = String(n)
  if (o.plain) env.TRUST_PROXY = '1'
  const tessera = async (...args) =>
    JSON.parse(
      (await exec(process.execPath, [path.join(o.root, 'bin/tessera.js'), ...args], { env }))
        .stdout,
    )
  try {
    await tessera('account', 'create', 'bench')
    const pk = await tessera(
      'token',
      'create',
      'bench',
      '--scopes',
      'styles:read,fonts:read',
      '--note',
      'test',
    )
    const server = path.join(o.root, 'dist/src/server.js')
    const service = await o.start(server, [], env, /Tessera is listening on (\S+)/)
    return {
      name: n === 1 ? 'Tessera, 1 process' : `Tessera, ${n} workers`,
      processes: n,
      child: service.child,
      runs: [],
      env,
      url: `${service.match[1]}/tokens/v2?access_token=${pk.token}`,
    }
  } catch (err) {
    rmSync(env.DATA_DIR, { recursive: true, force: true })
    throw err
  }
}

/** One retrieve through Node's client: it must succeed; the floor answers a body of its size. */
async function probe(o, t) {
  const ca = o.plain ? undefined : readFileSync(tlsFile(t, 'cert.pem'))
  const res = await get(t.url, ca, headersOf(o))
  if (res.status !== 200) throw new Error(`${t.name}, retrieve pk: ${res.status} ${res.text}`)
  t.size = Buffer.byteLength(res.text)
}

const headersOf = (o) => (o.plain ? { 'X-Forwarded-Proto': 'https' } : {})
const loadOf = (o, t, seconds) =>
  load({ url: t.url, headers: headersOf(o), connections: o.connections, seconds })

/** A target with workers must run them: a primary and n workers, nothing less. */
function checkProcesses(t) {
  const count = tree(t.child.pid).length
  const expected = t.processes === 1 ? 1 : t.processes + 1
  if (count < expected)
    throw new Error(`${t.name}: ${count} process(es) running, expected ${expected}`)
  t.count = count
}

async function stop(t) {
  if (t.child.exitCode === null && t.child.signalCode === null) {
    t.child.removeAllListeners('exit')
    const exited = once(t.child, 'exit')
    t.child.kill('SIGTERM')
    // A primary drains its workers before it exits (10 s at most); its data goes after.
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000).unref())])
  }
  if (t.env) rmSync(t.env.DATA_DIR, { recursive: true, force: true })
}

/** Loads one target, with its process tree's CPU time and the generator's. */
async function measure(o, t) {
  const cpuBefore = treeCpuUs(t.child.pid)
  const busyBefore = machineBusyUs()
  const started = process.hrtime.bigint()
  const r = await loadOf(o, t, o.seconds)
  const wallUs = Number(process.hrtime.bigint() - started) / 1000
  const cpu = treeCpuUs(t.child.pid) - cpuBefore
  const busy = machineBusyUs() - busyBefore
  return {
    ...r,
    cpuUs: cpu / r.requests,
    cores: cpu / wallUs,
    generatorCores: r.generatorCpuUs / wallUs,
    otherCores: Math.max(0, busy - cpu - r.generatorCpuUs) / wallUs,
  }
}

async function compare(o, targets) {
  const [floor1, floorN, tessera1, tesseraN] = targets
  // Warm-up: every process's JIT settles before anything is measured.
  for (const t of targets) await loadOf(o, t, 2)
  const n = o.workers
  process.stdout.write(
    `Tessera workers benchmark: retrieve pk, ${generator}, ${o.connections} connections, ` +
      `${o.seconds} s x ${o.rounds} rounds, ${cpus().length} CPUs, SQLite, ` +
      `${o.plain ? 'plain HTTP (TRUST_PROXY=1, X-Forwarded-Proto: https)' : 'TLS'}, ` +
      `Node ${process.version}, load average ${loadavg()[0].toFixed(2)} before\n` +
      `processes: ${targets.map((t) => `${t.name}: ${t.count}`).join('; ')}\n`,
  )
  // Each Tessera right after its floor; the order turns around every round.
  const order = [floor1, tessera1, floorN, tesseraN]
  for (let round = 1; round <= o.rounds; round++) {
    for (const t of round % 2 === 1 ? order : [...order].reverse()) {
      const r = await measure(o, t)
      t.runs.push(r)
      if (o.each)
        process.stdout.write(
          `    ${t.name}: ${fmt(r.rps)} req/s, ${fmt(r.cpuUs, 1)} µs, ` +
            `${fmt(r.cores, 2)} cores, ${generator} ${fmt(r.generatorCores, 2)} cores, ` +
            `others ${fmt(r.otherCores, 2)} cores\n`,
        )
    }
    process.stdout.write(`  round ${round} done\n`)
  }
  const rows = targets.map(row)
  const per = (a, b) => a.runs.map((r, i) => r.rps / b.runs[i].rps)
  const ratios = [
    { name: `Tessera 1 process / floor 1 process`, ratios: per(tessera1, floor1) },
    { name: `Tessera ${n} workers / floor ${n} workers`, ratios: per(tesseraN, floorN) },
    { name: `scaling: floor ${n} / floor 1`, ratios: per(floorN, floor1) },
    { name: `scaling: Tessera ${n} / Tessera 1`, ratios: per(tesseraN, tessera1) },
  ].map((r) => ({ ...r, median: median(r.ratios) }))
  process.stdout.write(`\n${report(rows, ratios).join('\n')}\n`)
  const failed = rows.reduce((sum, r) => sum + r.non2xx, 0)
  if (failed > 0) throw new Error(`${failed} requests failed`)
  // A partial run would replace the full figures: printed only.
  if (o.only !== undefined) return
  o.save({
    kind: `workers-${n}${o.plain ? '-plain' : ''}`,
    generator,
    connections: o.connections,
    seconds: o.seconds,
    rounds: o.rounds,
    cpus: cpus().length,
    workers: n,
    plain: o.plain,
    table: rows,
    ratios,
  })
}

function row(t) {
  const of = (f) => t.runs.map((r) => r[f])
  return {
    target: t.name,
    processes: t.count,
    rps: median(of('rps')),
    rpsRuns: of('rps'),
    cpuUs: median(of('cpuUs')),
    cores: median(of('cores')),
    generatorCores: median(of('generatorCores')),
    otherCores: median(of('otherCores')),
    machineBusy: median(
      t.runs.map((r) => (r.cores + r.generatorCores + r.otherCores) / cpus().length),
    ),
    p50: median(of('p50')),
    p99: median(of('p99')),
    non2xx: of('non2xx').reduce((a, b) => a + b, 0),
  }
}

function report(rows, ratios) {
  return [
    `| target | req/s | req/s range | CPU µs/req | cores used | ${generator} cores | other cores | machine busy | p50 ms | p99 ms |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.target} | ${fmt(r.rps)} | ${range(r.rpsRuns, 0)} | ${fmt(r.cpuUs, 1)} | ` +
        `${fmt(r.cores, 2)} | ${fmt(r.generatorCores, 2)} | ${fmt(r.otherCores, 2)} | ` +
        `${fmt(r.machineBusy * 100)} % | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} |`,
    ),
    '',
    `cores: CPU time over wall time, medians of rounds; the target's processes (primary and ` +
      `workers), the generator, and everything else on the machine (steal included); machine ` +
      `busy: the three over all cores. Well under 100 % with workers, they wait on the ` +
      `generator's round trips: more connections (BENCH_CONNECTIONS) load them fully.`,
    '',
    '| ratio of req/s, per round | median | range |',
    '| --- | ---: | ---: |',
    ...ratios.map((r) => `| ${r.name} | ${fmt(r.median, 2)} | ${range(r.ratios)} |`),
  ]
}
