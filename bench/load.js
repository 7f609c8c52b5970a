// Load generation: wrk when installed (lighter on a small machine), else autocannon from npm.
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
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

/**
 * CPU time of this process's children that have ended and been reaped, in microseconds (Linux):
 * across one load, the generator's own CPU time, as nothing else of the bench ends meanwhile.
 */
const reapedCpuUs = () => {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
    return ((Number(fields[13]) + Number(fields[14])) * 1e6) / 100
  } catch {
    return Number.NaN
  }
}

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

/**
 * Loads `url` for `seconds` over `connections` keep-alive connections, with `headers` ({name:
 * value}) on every request: {rps, p50, p99 (ms), non2xx, requests, generatorCpuUs}.
 */
export async function load({ url, method = 'GET', body, headers = {}, connections, seconds }) {
  const before = reapedCpuUs()
  const result = await loadWith({ url, method, body, headers, connections, seconds })
  return { ...result, generatorCpuUs: reapedCpuUs() - before }
}

async function loadWith({ url, method, body, headers, connections, seconds }) {
  if (generator === 'wrk') {
    const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency']
    for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`)
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
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`)
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
