// The verifier scenario of `npm run bench` (alone: BENCH_ONLY=verifier npm run bench):
// @tessera/verifier in this process against the benchmark's Tessera. Prints the cost of a first
// verification (one introspection over TLS) and verifications per second from the cache on one
// core (this process's main thread), for three kinds of request, with counting on (the default:
// every decision counted by outcome, reported every 10 s), and the fresh-string kind again with
// counting off (`reportEveryMs: 0`) beside it: what counting costs.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'

const root = path.resolve(import.meta.dirname, '..')
const seconds = Number(process.env.BENCH_VERIFIER_SECONDS ?? 1)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const firstSamples = 50
const poolSize = 256

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)]

/** Calls `step(i)` for `seconds`; answers verifications/s and the share of a core it took. */
function throughput(step) {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const until = started + seconds * 1000
  let n = 0
  let now = started
  while (now < until) {
    for (let i = 0; i < 65_536; i++) step(n + i)
    n += 65_536
    now = performance.now()
  }
  const used = process.cpuUsage(cpu)
  return {
    perSecond: (n * 1000) / (now - started),
    core: (used.user + used.system) / 1000 / (now - started),
  }
}

/**
 * `api(method, route, body)` calls the server with the benchmark's sk (tokens:write, styles:read).
 * Answers the result to save, with kind "verifier".
 */
export async function benchVerifier({ base, ca, adminKey, api }) {
  // The package as built from this checkout (the root build does not cover it).
  await promisify(execFile)(process.execPath, [
    path.join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    path.join(root, 'packages/verifier/tsconfig.json'),
  ])
  const { createVerifier } = await import('../packages/verifier/dist/index.js')
  const make = async (body) => {
    const res = await api('POST', body)
    if (res.status !== 200) throw new Error(`verifier bench: ${res.status} ${res.text}`)
    return res.body.token
  }
  const origin = 'https://app.example.com'
  const plain = []
  const restricted = []
  const fresh = []
  for (let i = 0; i < poolSize; i++) plain.push(await make({ scopes: ['styles:read'] }))
  for (let i = 0; i < poolSize; i++) {
    restricted.push(await make({ scopes: ['styles:read'], allowedUrls: [origin, '*.example.org'] }))
  }
  for (let i = 0; i < firstSamples + 1; i++) fresh.push(await make({ scopes: ['styles:read'] }))

  const verifier = createVerifier({ url: base, adminKey, ca })
  const uncounted = createVerifier({ url: base, adminKey, ca, reportEveryMs: 0 })
  try {
    await verifier.ready()
    await uncounted.ready()
    const check = { scope: 'styles:read' }
    const checkUrl = { scope: 'styles:read', origin }
    // First verifications: one introspection each (the first also opens its TLS connection).
    let started = performance.now()
    if (!(await verifier.verify(fresh[0], check)).valid) throw new Error('verifier bench: refused')
    const coldMs = performance.now() - started
    const firstMs = []
    for (const token of fresh.slice(1)) {
      started = performance.now()
      await verifier.verify(token, check)
      firstMs.push(performance.now() - started)
    }
    for (const t of plain) await verifier.verify(t, check)
    for (const t of restricted) await verifier.verify(t, checkUrl)
    for (const t of plain) await uncounted.verify(t, check)
    if (verifier.stats().entries < 2 * poolSize) throw new Error('verifier bench: not cached')
    if (uncounted.stats().entries < poolSize) throw new Error('verifier bench: not cached')

    // From the cache: verifyCached, synchronous. `fresh strings` makes a new string per call
    // (as reading a header does), so its hash is computed each time.
    const bytes = plain.map((t) => Buffer.from(t, 'latin1'))
    const mask = poolSize - 1
    let refused = 0
    // The floor of a fresh string: making it, hashing it and finding it in a Map of the same
    // strings, with nothing of the verifier's (issue 35 asks for at most 2x this).
    const bare = new Map(plain.map((t) => [t, check]))
    const kinds = {
      'bare Map.get of a fresh string (no verifier)': (i) => {
        if (bare.get(bytes[i & mask].toString('latin1')) !== check) refused++
      },
      'scope check': (i) => {
        if (!verifier.verifyCached(plain[i & mask], check)?.valid) refused++
      },
      'scope + allowed URL (Origin)': (i) => {
        if (!verifier.verifyCached(restricted[i & mask], checkUrl)?.valid) refused++
      },
      'scope check, fresh token string': (i) => {
        if (!verifier.verifyCached(bytes[i & mask].toString('latin1'), check)?.valid) refused++
      },
      'scope check, fresh token string, counting off': (i) => {
        if (!uncounted.verifyCached(bytes[i & mask].toString('latin1'), check)?.valid) refused++
      },
    }
    for (const step of Object.values(kinds)) for (let i = 0; i < 2_000_000; i++) step(i)
    const runs = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]))
    for (let r = 0; r < rounds; r++) {
      for (const [name, step] of Object.entries(kinds)) runs[name].push(throughput(step))
    }
    if (refused > 0) throw new Error(`verifier bench: ${refused} cached verifications refused`)
    const table = Object.entries(runs).map(([kind, rs]) => ({
      kind,
      perSecond: median(rs.map((r) => r.perSecond)),
      nsEach: 1e9 / median(rs.map((r) => r.perSecond)),
      core: median(rs.map((r) => r.core)),
    }))
    const first = {
      coldMs,
      p50Ms: median(firstMs),
      p99Ms: quantile(firstMs, 0.99),
      samples: firstMs.length,
    }
    const counting = verifier.stats()
    if (counting.pendingRows + counting.batchesSent === 0) {
      throw new Error('verifier bench: nothing counted')
    }
    const fmt = (n, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d })
    const nsOf = (kind) => table.find((r) => r.kind === kind)?.nsEach ?? Number.NaN
    const overBare =
      nsOf('scope check, fresh token string') / nsOf('bare Map.get of a fresh string (no verifier)')
    const lines = [
      '',
      `Verifier (@tessera/verifier, in process, ${seconds} s x ${rounds} rounds, median)`,
      '| from the cache | verifications/s | ns each | CPU (cores) |',
      '| --- | ---: | ---: | ---: |',
      ...table.map(
        (r) => `| ${r.kind} | ${fmt(r.perSecond)} | ${fmt(r.nsEach, 0)} | ${fmt(r.core, 2)} |`,
      ),
      '',
      `a fresh token string takes ${fmt(overBare, 2)}x a bare Map.get of a fresh string of the same length`,
      `first verification (introspection over TLS): p50 ${fmt(first.p50Ms, 2)} ms, p99 ${fmt(first.p99Ms, 2)} ms over ${first.samples} tokens; the very first (new connection) ${fmt(first.coldMs, 2)} ms`,
    ]
    process.stdout.write(`${lines.join('\n')}\n`)
    return { kind: 'verifier', seconds, rounds, pool: poolSize, table, first, overBare }
  } finally {
    await Promise.all([verifier.close(), uncounted.close()])
  }
}
