import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request } from 'node:https'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ServerProcess, startServer } from './server.js'

/**
 * What independent tools make of /metrics: `promtool check metrics` (Prometheus's own linter)
 * finds nothing in a real scrape, of one process and of a primary adding up its workers, and
 * docs/operations.md's table names every metric the endpoint serves, and none it does not.
 */

const root = path.resolve(import.meta.dirname, '../..')

/** Prometheus's promtool: PROMTOOL, or on the PATH (Debian's `prometheus` package). */
function promtool(): string {
  const tool = process.env.PROMTOOL ?? 'promtool'
  const found = spawnSync(tool, ['--version'], { encoding: 'utf8' })
  if (found.error !== undefined) {
    throw new Error(
      `${tool} not found: install it (apt-get install -y --no-install-recommends prometheus) or set PROMTOOL to its path`,
    )
  }
  return tool
}

/** promtool's verdict on a scrape: its exit status and everything it printed. */
function lint(text: string) {
  const run = spawnSync(promtool(), ['check', 'metrics'], { input: text, encoding: 'utf8' })
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}

/** One request over TLS, so that the request and validation families have samples. */
function hit(server: ServerProcess) {
  const ca = readFileSync(server.certFile)
  return new Promise<number>((resolve, reject) => {
    const req = request(`${server.url}/tokens/v2?access_token=nope`, { ca }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

async function scrape(server: ServerProcess): Promise<string> {
  const url = /Prometheus metrics: (\S+)/.exec(server.output())?.[1]
  expect(url).toBeDefined()
  const res = await fetch(url as string)
  expect(res.status).toBe(200)
  return res.text()
}

const typed = (text: string) =>
  [...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1] as string)

/** The metric names in the first column of docs/operations.md's table under "## Metrics". */
function documented(): { names: string[]; defaults: string } {
  const page = readFileSync(path.join(root, 'docs/operations.md'), 'utf8')
  const section = page.split(/^## /m).find((s) => s.startsWith('Metrics\n')) ?? ''
  const rows = section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| ---'))
  const firsts = rows.map((row) => row.split(' | ')[0] as string)
  const names = firsts.flatMap((cell) =>
    [...cell.matchAll(/`(tessera_[a-z_]+)`/g)].map((m) => m[1] as string),
  )
  return { names, defaults: firsts.find((cell) => cell.includes('process_')) ?? '' }
}

// REDIS_URL (the test's Redis, or an address where none answers: the metrics are there all the
// same) on one process; WORKERS=2 without Redis on the other: together every metric there is.
const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:1'
let single: ServerProcess
let workers: ServerProcess
const scrapes: Record<string, string> = {}
beforeAll(async () => {
  promtool()
  ;[single, workers] = await Promise.all([
    startServer({
      METRICS_PORT: '0',
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `tessera-test-${process.pid}-metrics:`,
    }),
    startServer({ METRICS_PORT: '0', WORKERS: '2' }),
  ])
  expect(await hit(single)).toBe(200)
  expect(await hit(workers)).toBe(200)
  scrapes['one process with REDIS_URL'] = await scrape(single)
  scrapes['a primary of WORKERS=2'] = await scrape(workers)
})
afterAll(async () => {
  await Promise.all([single?.stop(), workers?.stop()])
})

describe('promtool check metrics', () => {
  it.each(['one process with REDIS_URL', 'a primary of WORKERS=2'])(
    'finds nothing to say about the scrape of %s',
    (which) => {
      const text = scrapes[which] as string
      expect(typed(text)).toContain('tessera_http_requests_total')
      expect(typed(text)).toContain('process_cpu_user_seconds_total')
      expect(lint(text)).toEqual({ status: 0, output: '' })
    },
  )

  it('would have refused the gauges prom-client names like counters', () => {
    const text =
      '# HELP nodejs_active_handles_total Total.\n# TYPE nodejs_active_handles_total gauge\nnodejs_active_handles_total 3\n'
    const { status, output } = lint(text)
    expect(status).not.toBe(0)
    expect(output).toContain(
      'nodejs_active_handles_total non-counter metrics should not have "_total" suffix',
    )
    for (const t of Object.values(scrapes)) {
      expect(typed(t).filter((n) => /^nodejs_active_\w+_total$/.test(n))).toEqual([])
      expect(typed(t)).toContain('nodejs_active_handles')
    }
  })
})

describe("docs/operations.md's metrics table", () => {
  it("names exactly Tessera's metrics the endpoint serves", () => {
    const served = new Set(Object.values(scrapes).flatMap(typed))
    const ours = [...served].filter((n) => n.startsWith('tessera_')).sort()
    const { names } = documented()
    expect(names.length).toBe(new Set(names).size)
    expect([...names].sort()).toEqual(ours)
  })

  it("covers prom-client's defaults in one row, saying which are left out", () => {
    const served = Object.values(scrapes).flatMap(typed)
    const others = served.filter((n) => !n.startsWith('tessera_'))
    expect(others.filter((n) => !/^(process|nodejs)_/.test(n))).toEqual([])
    const { defaults } = documented()
    expect(defaults).toContain('`process_*`')
    expect(defaults).toContain('`nodejs_*`')
    expect(defaults).toContain('`nodejs_active_handles_total`')
  })
})
