// Load generation: wrk when installed (lighter on a small machine), else autocannon from npm.
import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'

const require = createRequire(import.meta.url)

export const generator = (() => {
  if (process.env.BENCH_GENERATOR) return process.env.BENCH_GENERATOR
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' })
  } catch (err) {
    if (err.code === 'ENOENT') return 'autocannon'
  }
  return 'wrk'
})()

const run = (cmd, args) =>
  new Promise((resolve, reject) => {
    const child = spawn(cmd, args)
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
    })
    child.stderr.on('data', (d) => {
      out += d
    })
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} failed: ${out}`)),
    )
  })

const toMs = (value, unit) => Number(value) * { us: 0.001, ms: 1, s: 1000 }[unit]

/** Loads `url` for `seconds` over `connections` keep-alive connections: {rps, p50, p99} (ms). */
export async function load({ url, method = 'GET', body, connections, seconds }) {
  if (generator === 'wrk') {
    const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency']
    if (method !== 'GET') {
      const script = path.join(tmpdir(), `tessera-bench-${process.pid}.lua`)
      writeFileSync(
        script,
        `wrk.method = "${method}"\nwrk.body = ${JSON.stringify(body)}\nwrk.headers["Content-Type"] = "application/json"\n`,
      )
      args.push('-s', script)
    }
    const out = await run('wrk', [...args, url])
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
    const pct = (p) => {
      const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(out)
      return m ? toMs(m[1], m[2]) : Number.NaN
    }
    const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)
    const requests = Number(/(\d+) requests in/.exec(out)?.[1])
    return { rps, p50: pct(50), p99: pct(99), non2xx: errors ? Number(errors[1]) : 0, requests }
  }
  const args = [require.resolve('autocannon/autocannon.js'), '-j', '-c', connections, '-d', seconds]
  if (method !== 'GET') args.push('-m', method, '-H', 'content-type=application/json', '-b', body)
  const out = await run(process.execPath, [...args, url])
  const result = JSON.parse(out.slice(out.indexOf('{')))
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    requests: result.requests.total,
  }
}
