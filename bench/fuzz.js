// `npm run fuzz`: grammar-aware generated requests against the built server, counted by status.
// Nothing a client sends may produce a 5xx (CONTRACT.md section 2), and the server must still be
// healthy after. Knobs, from the environment or as --requests/--seed/--concurrency:
// FUZZ_REQUESTS (100000), FUZZ_SEED (random, printed so that a run can be repeated),
// FUZZ_CONCURRENCY (32). DATABASE_URL / REDIS_URL select PostgreSQL / Redis, as for the bench;
// SHED_DELAY_MS is 0 (no load shedding) unless set.
//
// Mutations start from valid material: accounts and tokens made with the CLI and the API, a
// dashboard session per account, list cursors, and the signing key (the fuzzer sets
// SIGNING_KEYS), so that forged tokens with arbitrary payloads get past the signature check.
// Request `i` of seed `s` is always built from the same choices, whatever the concurrency.
import { execFile, spawn } from 'node:child_process'
import { randomBytes, randomInt } from 'node:crypto'
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connect, createSecureContext } from 'node:tls'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { dropSchema } from './api.js'
import { enc, generate } from './fuzz-grammar.js'

export { generate, mix } from './fuzz-grammar.js'

// --- Sending ----------------------------------------------------------------------------------

/** Failures of the connection that mean "the server closed it": counted, not failed. */
const closedCodes = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE'])

function send(target, agent, req, timeoutMs) {
  return new Promise((resolve) => {
    let settled = false
    const done = (outcome) => {
      if (settled) return
      settled = true
      resolve(outcome)
    }
    let out
    try {
      out = request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.path,
          headers: req.headers,
          setHost: req.setHost !== false,
          // Whatever Host says: otherwise Node would send it as SNI and check the certificate.
          servername: '',
          agent,
        },
        (res) => {
          let text = ''
          res.on('data', (d) => {
            if (text.length < 1000) text += d
          })
          const finish = () => done({ status: res.statusCode, text })
          res.on('end', finish)
          res.on('close', finish)
          res.on('error', finish)
        },
      )
    } catch (err) {
      return done({ status: 'unsent', text: `${err.code ?? ''} ${err.message}` })
    }
    out.setTimeout(timeoutMs, () => {
      done({ status: 'timeout', text: `no answer in ${timeoutMs} ms` })
      out.destroy()
    })
    out.on('error', (err) => {
      if (err.code === 'ECONNREFUSED') return done({ status: 'refused', text: err.message })
      const closed = closedCodes.has(err.code) || /socket hang up/.test(err.message)
      // An answer Node's parser refuses is no HTTP answer at all.
      const kind = closed ? 'closed' : err.code?.startsWith('HPE_') ? 'garbled' : 'error'
      done({ status: kind, text: `${err.code ?? ''} ${err.message}` })
    })
    try {
      out.end(req.body)
    } catch (err) {
      out.destroy()
      done({ status: 'unsent', text: `${err.code ?? ''} ${err.message}` })
    }
  })
}

function sendRaw(target, tls, raw, timeoutMs) {
  return new Promise((resolve) => {
    let head = ''
    let settled = false
    const socket = connect(
      {
        host: target.hostname,
        port: Number(target.port),
        ...tls,
      },
      () => socket.write(raw),
    )
    const done = (outcome) => {
      if (settled) return
      settled = true
      socket.destroy()
      resolve(outcome)
    }
    socket.setTimeout(timeoutMs, () =>
      done({ status: 'timeout', text: `no answer in ${timeoutMs} ms` }),
    )
    socket.on('data', (d) => {
      head += d.toString('latin1')
      const m = /^HTTP\/\d\.\d (\d{3})/.exec(head)
      if (m) done({ status: Number(m[1]), text: head.slice(0, 1000) })
      else if (head.length >= 12) done({ status: 'garbled', text: head.slice(0, 1000) })
    })
    socket.on('error', (err) => {
      if (err.code === 'ECONNREFUSED') done({ status: 'refused', text: err.message })
      else done({ status: 'closed', text: err.code })
    })
    socket.on('close', () => done({ status: 'closed', text: head }))
  })
}

/** Not a failure, but worth a look: an answer Node's HTTP parser refuses. */
const isOdd = (status) => status === 'garbled'
const isFailure = (status) =>
  typeof status !== 'number' ? status !== 'closed' && !isOdd(status) : status >= 500

/**
 * Sends `requests` generated requests over `concurrency` keep-alive connections. Returns the
 * counts by status ("closed" when the server closed the connection instead of answering) and,
 * for up to 20 distinct failures (5xx, timeouts, a refused connection), how to repeat them.
 */
export async function fuzz({
  base,
  ca,
  material,
  requests,
  seed,
  concurrency = 32,
  timeoutMs = 30_000,
  onProgress,
}) {
  const target = new URL(base)
  // One TLS context for every connection: building one per connection (from `ca`) costs more
  // than the request. No SNI, and the certificate is checked against the address.
  const tls = {
    secureContext: createSecureContext({ ca }),
    rejectUnauthorized: ca !== undefined,
    servername: '',
  }
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ...tls })
  const counts = new Map()
  const failures = new Map()
  const oddities = new Map()
  const slowest = []
  let failed = 0
  let fivexx = 0
  let next = 0
  let finished = 0
  const every = Math.max(1, Math.floor(requests / 10))
  const started = performance.now()
  const worker = async () => {
    while (next < requests) {
      const index = next++
      const req = generate(material, seed, index)
      const sent = performance.now()
      const outcome = req.raw
        ? await sendRaw(target, tls, req.raw, timeoutMs)
        : await send(target, agent, req, timeoutMs)
      outcome.ms = performance.now() - sent
      if (slowest.length < 5 || outcome.ms > slowest[slowest.length - 1].outcome.ms) {
        slowest.push({ ...req, outcome })
        slowest.sort((x, y) => y.outcome.ms - x.outcome.ms)
        slowest.length = Math.min(slowest.length, 5)
      }
      counts.set(outcome.status, (counts.get(outcome.status) ?? 0) + 1)
      if (typeof outcome.status === 'number' && outcome.status >= 500) fivexx++
      const key = req.raw
        ? `${outcome.status} raw ${req.raw.slice(0, 200)}`
        : `${outcome.status} ${req.method} ${req.path}`
      if (isFailure(outcome.status)) {
        failed++
        if (failures.size < 20 && !failures.has(key)) failures.set(key, { ...req, outcome })
      } else if (isOdd(outcome.status) && oddities.size < 5 && !oddities.has(key)) {
        oddities.set(key, { ...req, outcome })
      }
      finished++
      if (onProgress && finished % every === 0) {
        onProgress(finished, finished / ((performance.now() - started) / 1000))
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  agent.destroy()
  const seconds = (performance.now() - started) / 1000
  const order = (k) => (typeof k === 'number' ? k : 1000)
  const sorted = [...counts].sort(
    ([a], [b]) => order(a) - order(b) || String(a).localeCompare(String(b)),
  )
  return {
    requests,
    seed,
    concurrency,
    seconds,
    rps: requests / seconds,
    counts: Object.fromEntries(sorted.map(([k, v]) => [String(k), v])),
    fivexx,
    failed,
    failures: [...failures.values()],
    oddities: [...oddities.values()],
    slowest,
  }
}

const clip = (text, n = 2000) =>
  text.length > n ? `${text.slice(0, n)}… (${text.length} characters in all)` : text

/** The counts by status, the rate, and each distinct failure with what it takes to repeat it. */
export function report(result) {
  const lines = ['counts by status:']
  for (const [status, n] of Object.entries(result.counts)) {
    lines.push(`  ${status.padEnd(8)} ${String(n).padStart(7)}`)
  }
  lines.push(
    `${result.requests} requests in ${result.seconds.toFixed(1)} s: ${Math.round(result.rps)} requests/second (seed ${result.seed}, concurrency ${result.concurrency})`,
    `5xx: ${result.fivexx}; failures (5xx, timeouts, refused or unsendable): ${result.failed}`,
  )
  const describe = (f, n = 2000) => {
    lines.push('', `request #${f.index}: ${f.outcome.status} ${clip(f.outcome.text ?? '', 300)}`)
    if (f.raw) {
      lines.push(`  raw bytes: ${clip(JSON.stringify(f.raw))}`)
      return
    }
    lines.push(`  ${f.method} ${clip(f.path, n)}`)
    for (const [k, v] of Object.entries(f.headers)) lines.push(`  ${k}: ${clip(String(v), 300)}`)
    if (f.setHost === false) lines.push('  (no Host header)')
    if (f.body !== undefined) lines.push(`  body: ${clip(JSON.stringify(f.body), n)}`)
  }
  for (const f of result.failures) describe(f)
  lines.push('', 'slowest answers:')
  for (const f of result.slowest) {
    const what = f.raw ? `raw ${JSON.stringify(f.raw.slice(0, 120))}` : `${f.method} ${f.path}`
    lines.push(
      `  ${Math.round(f.outcome.ms)} ms: ${f.outcome.status} #${f.index} ${clip(what, 160)}`,
    )
  }
  if (result.oddities.length > 0) {
    lines.push('', "answers that Node's HTTP parser refused (not failures; up to 5):")
    for (const f of result.oddities) describe(f, 200)
  }
  return lines.join('\n')
}

// --- Material ---------------------------------------------------------------------------------

/** One HTTPS request outside the fuzz: {status, headers, text, json}. */
export function call(base, ca, method, route, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${route}`,
      { method, headers, ca, rejectUnauthorized: ca !== undefined, agent: false },
      (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => {
          let json
          try {
            json = JSON.parse(text)
          } catch {}
          resolve({ status: res.statusCode, headers: res.headers, text, json })
        })
      },
    )
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${route} timed out`)))
    req.on('error', reject)
    req.end(body)
  })
}

/** A signing key for SIGNING_KEYS, so that the fuzzer can sign payloads of its own. */
export function signingKey() {
  const secret = randomBytes(32)
  return { env: `fuzz:${secret.toString('base64')}`, secret }
}

/** Accounts, dashboard sessions and valid tokens of every kind to mutate. */
export async function prepare({ base, ca, secret, cli, victims = 40 }) {
  const json = (method, route, body) =>
    call(base, ca, method, route, {
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const expect200 = (res, what) => {
    if (res.status !== 200) throw new Error(`${what}: ${res.status} ${res.text.slice(0, 300)}`)
    return res.json
  }
  const now = Date.now()
  const origin = new URL(base).origin

  /** An account and two secret tokens, made by the CLI. */
  const made = async (name) => {
    const account = await cli('account', 'create', name)
    const sk = await cli(
      'token',
      'create',
      name,
      '--scopes',
      'tokens:read,tokens:write,scopes:list',
      '--note',
      'test',
    )
    const scopes = expect200(
      await call(base, ca, 'GET', `/scopes/v1/${name}?access_token=${sk.token}`),
      'list scopes',
    ).map((s) => s.id)
    // Secret, holding every scope of the account: its creates pass the scope checks.
    const rich = await cli('token', 'create', name, '--scopes', scopes.join(','), '--note', 'test')
    return { name, account, sk, scopes, rich }
  }

  /** Its tokens to update and delete, temporary and public ones, and a dashboard session. */
  const holder = async ({ name, account, sk, scopes, rich }, sacrificial) => {
    const auth = `access_token=${rich.token}`
    const create = (body) => json('POST', `/tokens/v2/${name}?${auth}`, body)
    const pk = expect200(
      await create({ scopes: ['styles:read'], allowedUrls: ['example.com'] }),
      'create a public token',
    )
    const tk = expect200(
      await create({
        expires: new Date(now + 59 * 60_000).toISOString(),
        scopes: ['tokens:read', 'tokens:write', 'scopes:list'],
      }),
      'create a temporary token',
    )
    const victimTokens = await Promise.all(
      Array.from({ length: victims }, (_, j) =>
        create({
          note: `victim ${j}`,
          scopes: j % 3 === 0 ? ['tokens:read'] : ['styles:read'],
          ...(j % 4 === 0 ? { allowedUrls: ['*.example.com', 'https://example.org/x'] } : {}),
        }),
      ),
    )
    const cursors = []
    for (const sortby of ['created', 'modified']) {
      const res = await call(base, ca, 'GET', `/tokens/v2/${name}?limit=3&sortby=${sortby}&${auth}`)
      const start = /[?&]start=([^&>]+)/.exec(String(res.headers.link ?? ''))?.[1]
      if (start) cursors.push(decodeURIComponent(start))
    }
    const link = new URL(account.setupUrl).pathname.split('/').pop()
    const password = `fuzz-password-${randomBytes(8).toString('hex')}`
    const setup = await call(base, ca, 'POST', `/account/setup/${link}`, {
      headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: `password=${enc(password)}&confirm=${enc(password)}`,
    })
    const cookie = [setup.headers['set-cookie'] ?? []].flat()[0]?.split(';')[0]
    if (setup.status !== 303 || !cookie) {
      throw new Error(`dashboard setup: ${setup.status} ${setup.text.slice(0, 300)}`)
    }
    const page = await call(base, ca, 'GET', '/account', { headers: { cookie } })
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1]
    if (!csrf) throw new Error(`no CSRF token on /account: ${page.status}`)
    return {
      username: name,
      scopes,
      sk: sk.token,
      skId: sk.id,
      rich: rich.token,
      richId: rich.id,
      pk: pk.token,
      pkId: pk.id,
      tk: tk.token,
      defaultId: account.defaultToken.id,
      defaultToken: account.defaultToken.token ?? pk.token,
      victims: victimTokens.map((res) => expect200(res, 'create a token')),
      cursors: cursors.length > 0 ? cursors : [''],
      setupLink: link,
      password,
      session: { cookie, csrf },
      // Its sessions may be ended and its password changed (to itself): the others' never.
      sacrificial,
    }
  }
  // One CLI at a time: two at once can fail with "database is locked" on SQLite.
  const cliMade = []
  for (const name of ['fuzz-a', 'fuzz-b', '0fuzz_c']) cliMade.push(await made(name))
  const accounts = await Promise.all(cliMade.map((m, i) => holder(m, i === cliMade.length - 1)))
  const scopes = [...new Set(accounts.flatMap((a) => a.scopes))]
  const url = new URL(base)
  return { now, origin: url.origin, host: url.host, secret, scopes, accounts }
}

// --- `npm run fuzz` ---------------------------------------------------------------------------

const root = path.resolve(import.meta.dirname, '..')

function options() {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
    },
  })
  const number = (value, fallback) => {
    if (value === undefined || value === '') return fallback
    const n = Number(value)
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a whole number: ${value}`)
    return n
  }
  return {
    requests: number(values.requests ?? process.env.FUZZ_REQUESTS, 100_000),
    seed: number(values.seed ?? process.env.FUZZ_SEED, randomInt(2 ** 32)) >>> 0,
    concurrency: Math.max(1, number(values.concurrency ?? process.env.FUZZ_CONCURRENCY, 32)),
  }
}

function startServer(env) {
  const child = spawn(process.execPath, [path.join(root, 'dist/src/server.js')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      if (out.length < 1_000_000) out += d
      const m = /Tessera is listening on (\S+)/.exec(out)
      const cert = /TLS certificate: (\S+)/.exec(out)
      if (m && cert) resolve({ child, url: m[1], certFile: cert[1], output: () => out })
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', (code) => reject(new Error(`the server exited with ${code}:\n${out}`)))
  })
}

async function main() {
  const { requests, seed, concurrency } = options()
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-fuzz-'))
  const key = signingKey()
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    RATE_LIMIT_PER_MINUTE: process.env.RATE_LIMIT_PER_MINUTE ?? '1000000000',
    LOG_LEVEL: 'warn',
    SIGNING_KEYS: key.env,
    DASHBOARD_SIGNUP: 'open',
    // Load shedding answers 503 when the event loop runs late: on a busy machine, a question of
    // capacity, not of input. An input that stalls the loop shows in "slowest answers" instead.
    SHED_DELAY_MS: process.env.SHED_DELAY_MS ?? '0',
  }
  const run = `${process.pid}_${Date.now()}`
  if (env.DATABASE_URL && !env.DATABASE_SCHEMA) env.DATABASE_SCHEMA = `tessera_fuzz_${run}`
  if (env.REDIS_URL && !env.REDIS_KEY_PREFIX) env.REDIS_KEY_PREFIX = `tessera-fuzz-${run}:`
  const exec = promisify(execFile)
  const cli = async (...args) =>
    JSON.parse(
      (await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], { env })).stdout,
    )
  const say = (line = '') => process.stdout.write(`${line}\n`)
  const server = await startServer(env)
  let ok = false
  try {
    const ca = readFileSync(server.certFile)
    say(
      `Tessera fuzz: ${requests} requests, seed ${seed}, concurrency ${concurrency}, ` +
        `${env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}${env.REDIS_URL ? ' + Redis' : ''}, ${server.url}`,
    )
    say(`repeat with: FUZZ_SEED=${seed} FUZZ_REQUESTS=${requests} npm run fuzz`)
    const material = await prepare({ base: server.url, ca, secret: key.secret, cli })
    const result = await fuzz({
      base: server.url,
      ca,
      material,
      requests,
      seed,
      concurrency,
      onProgress: (n, rps) => say(`  ${n} requests, ${Math.round(rps)}/s`),
    })
    say(report(result))
    if (result.failures.length > 0) {
      const file = path.join(tmpdir(), `tessera-fuzz-failures-${seed}.json`)
      writeFileSync(file, `${JSON.stringify(result.failures, null, 2)}\n`)
      say(`\nthe failures in full: ${file}`)
    }
    const health = await call(server.url, ca, 'GET', '/healthz').catch((err) => ({
      status: 0,
      text: err.message,
    }))
    const alive = server.child.exitCode === null && server.child.signalCode === null
    say(
      `GET /healthz: ${health.status} ${health.text}; server process ${server.child.pid} ${alive ? 'alive' : 'gone'}`,
    )
    const errors = server
      .output()
      .split('\n')
      .filter((line) => /"level":(50|60)/.test(line))
    say(`server log: ${errors.length} error lines`)
    for (const line of errors.slice(0, 5)) say(`  ${clip(line, 1000)}`)
    ok = result.failed === 0 && health.status === 200 && alive
    say(ok ? 'PASS' : 'FAIL')
  } finally {
    server.child.kill('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
    if (env.DATABASE_SCHEMA?.startsWith('tessera_fuzz_')) await dropSchema(env)
  }
  if (!ok) process.exitCode = 1
}

const entry = process.argv[1]
if (entry !== undefined && realpathSync(entry) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`fuzz: ${err.stack}\n`)
    process.exitCode = 1
  })
}
