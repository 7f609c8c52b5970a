// The floor: a bare Fastify HTTPS server with one route answering a JSON body of a requested
// size. What the framework itself costs to answer a request; Tessera is measured against it.
// With a fourth argument `headers`, it also sends the five headers the contract requires on
// every response (CORS 2, rate limit 3), to measure what they cost on their own.
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'

const [certFile, keyFile, port, mode] = process.argv.slice(2)
const app = Fastify({ https: { cert: readFileSync(certFile), key: readFileSync(keyFile) } })
const bodies = new Map()
const cors = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers':
    'Link, X-Rate-Limit-Interval, X-Rate-Limit-Limit, X-Rate-Limit-Reset, Retry-After',
}

app.get('/floor/:size', async (request, reply) => {
  const size = Number(request.params.size)
  let body = bodies.get(size)
  if (body === undefined) {
    // {"pad":"xxx…"} is 10 bytes of framing around the padding.
    body = { pad: 'x'.repeat(Math.max(0, size - 10)) }
    bodies.set(size, body)
  }
  if (mode === 'headers') {
    reply.headers(cors)
    reply.headers({
      'x-rate-limit-interval': '60',
      'x-rate-limit-limit': '1000000000',
      'x-rate-limit-reset': String(Math.floor(Date.now() / 60_000) * 60 + 60),
    })
  }
  return body
})

// A signal ends the process normally, so that a profiler wrapping it writes its output.
process.once('SIGINT', () => app.close().then(() => process.exit(0)))
await app.listen({ host: '127.0.0.1', port: Number(port) })
process.stdout.write(`floor ready ${app.server.address().port}\n`)
