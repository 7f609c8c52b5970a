// The verification log's cost (`npm run bench`; alone: BENCH_ONLY=log npm run bench): the same
// build started four ways (VERIFICATION_LOG=off, =all, the default =refused, and =all with
// OpenTelemetry exporting traces, metrics and logs to a local OTLP/HTTP sink), each loaded in turn with retrieve of one pk, round after round
// (alternating, so that the machine's drift falls on all four alike). Prints req/s of each, the
// ratios to `off` (median and range over rounds), the rows written and dropped by the `all`
// service (from its /metrics), and the OTLP requests the sink received.
import { execFile } from 'node:child_process'
import { rmSync } from 'node:fs'
import { createServer } from 'node:http'
import path from 'node:path'
import { promisify } from 'node:util'
import { load } from './load.js'

const exec = promisify(execFile)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-')

/** A local OTLP/HTTP receiver that takes everything and answers 200: the exporter's far end. */
async function sink() {
  const received = { requests: 0, bytes: 0 }
  const server = createServer((req, res) => {
    req.on('data', (d) => {
      received.bytes += d.length
    })
    req.on('end', () => {
      received.requests++
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, received, url: `http://127.0.0.1:${server.address().port}` }
}

/** A counter's value in a Prometheus text page, 0 when absent. */
const counter = (page, line) => Number(new RegExp(`^${line} (\\d+)`, 'm').exec(page)?.[1] ?? 0)

export async function benchLog({ root, start, serviceEnv, save, seconds, rounds, connections }) {
  const otlp = await sink()
  const modes = [
    { name: 'off', env: { VERIFICATION_LOG: 'off' } },
    { name: 'all', env: { VERIFICATION_LOG: 'all' } },
    { name: 'refused (default)', env: {} },
    {
      name: 'all + OTLP',
      env: {
        VERIFICATION_LOG: 'all',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_METRIC_EXPORT_INTERVAL: '5000',
      },
    },
  ]
  const services = []
  try {
    for (const m of modes) {
      // The same configuration but for VERIFICATION_LOG: /metrics on in each (the rows are read
      // from the 'all' one's), as its request histogram costs each alike.
      const env = { ...serviceEnv('sqlite'), METRICS_PORT: '0', ...m.env }
      const cli = async (...args) =>
        JSON.parse(
          (await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], { env }))
            .stdout,
        )
      await cli('account', 'create', 'bench')
      const pk = await cli('token', 'create', 'bench', '--scopes', 'styles:read', '--note', 'b')
      const service = await start(
        path.join(root, 'dist/src/server.js'),
        [],
        env,
        /Tessera is listening on (\S+)/,
      )
      const metrics = /Prometheus metrics: (http:\/\/\S+)/.exec(service.output())?.[1]
      const url = `${service.match[1]}/tokens/v2?access_token=${pk.token}`
      services.push({ ...m, env, service, metrics, url, rps: [] })
    }
    for (const s of services) await load({ url: s.url, connections, seconds: 1 })
    for (let round = 0; round < rounds; round++) {
      for (const s of services) s.rps.push((await load({ url: s.url, connections, seconds })).rps)
    }
    const off = services[0]
    const ratios = (s) => s.rps.map((r, i) => r / off.rps[i])
    const lines = [
      '',
      `verification log: retrieve pk, ${rounds} rounds of ${seconds} s, ${connections} connections`,
      '| VERIFICATION_LOG | req/s (median) | ratio to off | ratio range |',
      '| --- | ---: | ---: | ---: |',
      ...services.map((s) => {
        const r = ratios(s)
        return `| ${s.name} | ${fmt(median(s.rps))} | ${fmt(median(r), 2)} | ${fmt(Math.min(...r), 2)}-${fmt(Math.max(...r), 2)} |`
      }),
    ]
    const all = services[1]
    let rows = {}
    if (all.metrics !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      const page = await (await fetch(all.metrics)).text()
      rows = {
        written: counter(page, 'tessera_verification_log_rows_total{result="written"}'),
        dropped: counter(page, 'tessera_verification_log_rows_total{result="dropped"}'),
      }
      lines.push(`rows of 'all': ${rows.written} written, ${rows.dropped} dropped`)
    }
    lines.push(`OTLP sink: ${otlp.received.requests} requests, ${otlp.received.bytes} bytes`)
    process.stdout.write(`${lines.join('\n')}\n`)
    save({
      kind: 'verification-log',
      seconds,
      rounds,
      connections,
      modes: services.map((s) => ({ name: s.name, rps: s.rps, ratios: ratios(s) })),
      rows,
      otlp: otlp.received,
    })
  } finally {
    for (const s of services) {
      s.service.child.kill('SIGTERM')
      rmSync(s.env.DATA_DIR, { recursive: true, force: true })
    }
    otlp.server.close()
  }
}
