// `npm run bench:capacity`: what one request of each kind costs the fleet's shared servers, for
// docs/capacity.md. One instance on PostgreSQL + Redis (DATABASE_URL, REDIS_URL; a schema and
// key prefix of its own) is loaded with each kind for BENCH_SECONDS (5) and, around each load,
// the server's, PostgreSQL's and Redis's CPU time, PostgreSQL's commits, WAL bytes, rows and
// table growth, and Redis's commands are read. Prints a table per request (and per token for
// the table growth).
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import pg from 'pg'
import { api } from './api.js'
import { load } from './load.js'

const root = path.resolve(import.meta.dirname, '..')
const exec = promisify(execFile)
const seconds = Number(process.env.BENCH_SECONDS ?? 5)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10)
const databaseUrl = process.env.DATABASE_URL
const redisUrl = process.env.REDIS_URL
const tick = 100 // clock ticks a second (/proc)

/** CPU time (user + system) of processes, in microseconds, from /proc. */
const cpuUs = (pids) =>
  pids.reduce((sum, pid) => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
      return sum + ((Number(fields[11]) + Number(fields[12])) * 1e6) / tick
    } catch {
      return sum // a process that ended meanwhile
    }
  }, 0)

/** Every process whose command is `name` (PostgreSQL's server and its backends). */
const pidsOf = (name) =>
  readdirSync('/proc').filter((p) => {
    if (!/^\d+$/.test(p)) return false
    try {
      return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === name
    } catch {
      return false
    }
  })

async function main() {
  if (!databaseUrl || !redisUrl) throw new Error('bench:capacity needs DATABASE_URL and REDIS_URL')
  const run = `${process.pid}_${Date.now()}`
  const schema = `tessera_capacity_${run}`
  const env = {
    ...process.env,
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'tessera-capacity-')),
    HOST: '127.0.0.1',
    PORT: '0',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
    DATABASE_SCHEMA: schema,
    REDIS_KEY_PREFIX: `tessera-capacity-${run}:`,
  }
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  const redis = new Redis(redisUrl)
  let server
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
    server = spawn(process.execPath, [path.join(root, 'dist/src/server.js')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const base = await new Promise((resolve, reject) => {
      let out = ''
      server.stdout.on('data', (d) => {
        out += d
        const m = /Tessera is listening on (\S+)/.exec(out)
        if (m) resolve(m[1])
      })
      server.on('exit', () => reject(new Error(`the server did not start:\n${out}`)))
    })
    const ca = readFileSync(path.join(env.DATA_DIR, 'tls', 'cert.pem'))
    const expires = new Date(Date.now() + 3_600_000 - 600_000).toISOString()
    const tk = (
      await api(base, ca, 'POST', `/tokens/v2/bench?access_token=${sk}`, {
        expires,
        scopes: ['styles:read'],
      })
    ).body.token

    const sample = async () => {
      const stats = (
        await db.query(
          `select xact_commit::float8 as commits, tup_inserted::float8 as inserted,
             tup_fetched::float8 + tup_returned::float8 as read,
             pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal,
             (select coalesce(sum(pg_total_relation_size(c.oid)), 0)::float8 from pg_class c
               join pg_namespace n on n.oid = c.relnamespace
               where n.nspname = $1 and c.relkind = 'r') as bytes
           from pg_stat_database where datname = current_database()`,
          [schema],
        )
      ).rows[0]
      const info = await redis.info()
      const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1])
      return {
        server: cpuUs([server.pid]),
        postgres: cpuUs(pidsOf('postgres')),
        redisCpu: (field('used_cpu_sys') + field('used_cpu_user')) * 1e6,
        redisCommands: field('total_commands_processed'),
        ...stats,
      }
    }
    const kinds = [
      { name: 'retrieve pk', route: `/tokens/v2?access_token=${pk}` },
      { name: 'retrieve tk', route: `/tokens/v2?access_token=${tk}` },
      {
        name: 'create (pk)',
        route: `/tokens/v2/bench?access_token=${sk}`,
        method: 'POST',
        body: JSON.stringify({ note: 'capacity', scopes: ['styles:read'] }),
      },
    ]
    const rows = []
    for (const k of kinds) {
      const url = `${base}${k.route}`
      await load({ url, method: k.method, body: k.body, connections, seconds: 1 }) // warm-up
      // The statistics collector reports about every 0.5 s: a pause on each side of the load.
      await new Promise((r) => setTimeout(r, 1500))
      const before = await sample()
      const r = await load({ url, method: k.method, body: k.body, connections, seconds })
      await new Promise((r) => setTimeout(r, 1500))
      const after = await sample()
      if (r.non2xx > 0) throw new Error(`${k.name}: ${r.non2xx} failed requests`)
      const per = (f) => (after[f] - before[f]) / r.requests
      rows.push({
        kind: k.name,
        rps: r.rps,
        serverCpuUs: per('server'),
        // A backend that ended during the load takes its time with it: never below 0.
        postgresCpuUs: Math.max(0, per('postgres')),
        commits: per('commits'),
        walBytes: per('wal'),
        rowsInserted: per('inserted'),
        tableBytes: per('bytes'),
        redisCommands: per('redisCommands'),
        redisCpuUs: per('redisCpu'),
      })
      process.stdout.write(`  ${k.name}: ${r.requests} requests\n`)
    }
    const f = (n, d) => (Math.abs(n) < 0.0005 ? '0' : n.toFixed(d))
    process.stdout.write(
      [
        '',
        `Per request, one instance on PostgreSQL + Redis, ${connections} connections, ${seconds} s each`,
        '| request | req/s | server CPU µs | PostgreSQL CPU µs | commits | WAL bytes | rows inserted | table bytes | Redis commands | Redis CPU µs |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
        ...rows.map(
          (r) =>
            `| ${r.kind} | ${f(r.rps, 0)} | ${f(r.serverCpuUs, 1)} | ${f(r.postgresCpuUs, 1)} | ${f(r.commits, 3)} | ${f(r.walBytes, 0)} | ${f(r.rowsInserted, 2)} | ${f(r.tableBytes, 0)} | ${f(r.redisCommands, 4)} | ${f(r.redisCpuUs, 2)} |`,
        ),
        '',
      ].join('\n'),
    )
    await batchSizes(env)
    await redisScript()
  } finally {
    server?.kill('SIGTERM')
    await db.query(`drop schema if exists ${schema} cascade`)
    await db.end()
    const keys = await redis.keys(`tessera-capacity-${run}:*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
    rmSync(env.DATA_DIR, { recursive: true, force: true })
  }
}

/** PostgreSQL's CPU for one create statement (tokens, events, outbox) by the size of its group. */
async function batchSizes(env) {
  const { readEnv, toConfig } = await import('../dist/src/config.js')
  const { createContext } = await import('../dist/src/context.js')
  const { insertWithEvents } = await import('../dist/src/db/creates.js')
  const { auditEvent, cliActor } = await import('../dist/src/audit/events.js')
  const ctx = await createContext(toConfig(readEnv({ ...env, LOG_LEVEL: 'silent' })))
  const lines = [
    '',
    'One create statement on PostgreSQL by group size (sequential, CPU of every postgres process)',
    '| tokens per statement | PostgreSQL CPU µs per token | per statement | wall µs per token |',
    '| ---: | ---: | ---: | ---: |',
  ]
  try {
    const account = await ctx.accounts.find('bench')
    for (const size of [1, 5, 10, 20, 100]) {
      const statements = Math.ceil(4000 / size)
      const pids = pidsOf('postgres')
      const cpu0 = cpuUs(pids)
      const wall0 = performance.now()
      for (let i = 0; i < statements; i++) {
        const records = Array.from({ length: size }, () =>
          ctx.tokens.newRecord(account, { note: 'x', scopes: ['styles:read'], allowedUrls: null }),
        )
        const details = { usage: 'pk', scopes: ['styles:read'] }
        const events = records.map((r) =>
          auditEvent(
            Date.now(),
            'token.created',
            cliActor,
            { type: 'token', id: r.id },
            'bench',
            details,
          ),
        )
        await insertWithEvents(ctx.db, records, events)
      }
      const us = cpuUs(pids) - cpu0
      const tokens = statements * size
      const wall = ((performance.now() - wall0) * 1000) / tokens
      lines.push(
        `| ${size} | ${(us / tokens).toFixed(1)} | ${(us / statements).toFixed(0)} | ${wall.toFixed(0)} |`,
      )
    }
  } finally {
    await ctx.close()
  }
  process.stdout.write(`${lines.join('\n')}\n`)
}

/** Redis's throughput for the rate limit's script (redis-benchmark, when installed). */
async function redisScript() {
  const { readFileSync: read } = await import('node:fs')
  const source = read(path.join(root, 'dist/src/ratelimit/redis.js'), 'utf8')
  const script = /const leaseScript = `([\s\S]*?)`/.exec(source)?.[1]
  const { port, hostname } = new URL(redisUrl)
  const redis = new Redis(redisUrl)
  const sha = await redis.script('LOAD', script)
  const lines = [
    '',
    'The rate limit script on this Redis (redis-benchmark, 20 clients, 300,000 calls)',
  ]
  try {
    for (const pipeline of [1, 16]) {
      const { stdout } = await exec('redis-benchmark', [
        ...['-h', hostname, '-p', port || '6379', '-q', '-n', '300000', '-c', '20'],
        ...['-P', String(pipeline), '-r', '100000'],
        ...['evalsha', sha, '1', `tessera-capacity-script:__rand_int__`],
        ...['61', '1000000000', '1', '0', '10', '4'],
      ])
      const rps = /([\d.]+) requests per second/.exec(stdout)?.[1]
      lines.push(`- pipeline ${pipeline}: ${Math.round(Number(rps))} calls/s`)
    }
  } catch (err) {
    lines.push(
      `- not measured: ${err.code === 'ENOENT' ? 'redis-benchmark is not installed' : err.message}`,
    )
  } finally {
    const keys = await redis.keys('tessera-capacity-script:*')
    for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000))
    redis.disconnect()
  }
  process.stdout.write(`${lines.join('\n')}\n`)
}

main().catch((err) => {
  process.stderr.write(`bench:capacity: ${err.stack}\n`)
  process.exitCode = 1
})
