// The floor: a bare Fastify HTTPS server with one route answering a JSON body of a requested
// size. What the framework itself costs to answer a request; Tessera is measured against it.
// Arguments: cert file, key file, port, then any of these flags:
// - `headers`: also send the headers Tessera sends on every response (CORS 2, nosniff, HSTS over
//   TLS, Mapbox's rate limit 3, the IETF RateLimit-Policy and RateLimit), to measure their cost;
// - `plain`: plain HTTP (the cert and key are then ignored, pass `-`), as Tessera behind a
//   TLS-terminating proxy (TRUST_PROXY) serves;
// - `raw`: no framework at all, a bare `node:https` (or `node:http` with `plain`) server answering
//   the same body with the headers a retrieve carries (CORS 2, nosniff, HSTS, rate limit 5,
//   content type and length): the least a Node process can do per request, the second floor of `npm run bench`;
// - `workers=N`: N worker processes (node:cluster) sharing the socket, handed connections
//   round-robin by the primary, as `tessera serve --workers N` does; `floor ready <port>` is
//   printed once all of them listen.
import cluster from 'node:cluster'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import Fastify from 'fastify'

const [certFile, keyFile, port, ...flags] = process.argv.slice(2)
const headers = flags.includes('headers')
const plain = flags.includes('plain')
const workers = Number(flags.find((f) => f.startsWith('workers='))?.slice('workers='.length) ?? 0)
const raw = flags.includes('raw')
/** What every Tessera answer starts with: CORS, nosniff, and HSTS over TLS (src/http/headers.ts). */
const cors = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers':
    'Link, X-Rate-Limit-Interval, X-Rate-Limit-Limit, X-Rate-Limit-Reset, RateLimit-Policy, RateLimit, Retry-After',
  'x-content-type-options': 'nosniff',
  ...(plain ? {} : { 'strict-transport-security': 'max-age=63072000' }),
}
const policy = '"requests";q=1000000000;w=60'
let served = 0
/** The IETF RateLimit of a request: what is left changes with each, as Tessera's does. */
const remainingText = () =>
  `"requests";r=${999_999_999 - (served++ % 1_000_000)};t=${60 - (Math.floor(Date.now() / 1000) % 60)}`
/** The padded JSON body of `size` bytes: {"pad":"xxx…"} is 10 bytes of framing. */
const padded = (size) => ({ pad: 'x'.repeat(Math.max(0, size - 10)) })
const resetText = () => String(Math.floor(Date.now() / 60_000) * 60 + 60)

if (workers > 0 && cluster.isPrimary) await supervise()
else if (raw) await serveRaw()
else await serve()

/** The primary: forks the workers and reports the port once every one of them listens. */
async function supervise() {
  // Round-robin is Node's default on Linux; set it so that the floor matches Tessera's primary
  // on every platform.
  cluster.schedulingPolicy = cluster.SCHED_RR
  const listening = []
  for (let i = 0; i < workers; i++) {
    const worker = cluster.fork()
    listening.push(
      new Promise((resolve, reject) => {
        worker.once('listening', (address) => resolve(address.port))
        worker.once('exit', (code) => reject(new Error(`floor worker exited with ${code}`)))
      }),
    )
  }
  // Every worker gets the same port from listen(0) in a cluster.
  const [first] = await Promise.all(listening)
  // The workers go with the primary (a worker whose primary is gone leaves on its own too).
  const stop = () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM')
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  process.stdout.write(`floor ready ${first}\n`)
}

async function serve() {
  const app = Fastify(
    plain ? {} : { https: { cert: readFileSync(certFile), key: readFileSync(keyFile) } },
  )
  const bodies = new Map()

  app.get('/floor/:size', async (request, reply) => {
    const size = Number(request.params.size)
    let body = bodies.get(size)
    if (body === undefined) {
      body = padded(size)
      bodies.set(size, body)
    }
    if (headers) {
      reply.headers(cors)
      reply.headers({
        'x-rate-limit-interval': '60',
        'x-rate-limit-limit': '1000000000',
        'x-rate-limit-reset': resetText(),
        'ratelimit-policy': policy,
        ratelimit: remainingText(),
      })
    }
    return body
  })

  // A signal ends the process normally, so that a profiler wrapping it writes its output.
  if (cluster.isPrimary) process.once('SIGINT', () => app.close().then(() => process.exit(0)))
  await app.listen({ host: '127.0.0.1', port: Number(port) })
  if (cluster.isPrimary) process.stdout.write(`floor ready ${app.server.address().port}\n`)
}

/** The raw floor: node:https (or node:http) alone, headers written as one list. */
async function serveRaw() {
  const bodies = new Map()
  const first = Object.entries(cors).flat()
  const handler = (req, res) => {
    const size = Number(req.url.slice('/floor/'.length))
    let body = bodies.get(size)
    if (body === undefined) {
      body = JSON.stringify(padded(size))
      bodies.set(size, body)
    }
    res.writeHead(200, [
      ...first,
      'x-rate-limit-interval',
      '60',
      'x-rate-limit-limit',
      '1000000000',
      'x-rate-limit-reset',
      resetText(),
      'ratelimit-policy',
      policy,
      'ratelimit',
      remainingText(),
      'content-type',
      'application/json; charset=utf-8',
      'content-length',
      String(Buffer.byteLength(body)),
    ])
    res.end(body)
  }
  const server = plain
    ? http.createServer(handler)
    : https.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, handler)
  if (cluster.isPrimary) process.once('SIGINT', () => server.close(() => process.exit(0)))
  server.listen(Number(port), '127.0.0.1', () => {
    if (cluster.isPrimary) process.stdout.write(`floor ready ${server.address().port}\n`)
  })
}
