// The floor: a bare Fastify HTTPS server with one route answering a JSON body of a requested
// size. What the framework itself costs to answer a request; Tessera is measured against it.
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'

const [certFile, keyFile, port] = process.argv.slice(2)
const app = Fastify({ https: { cert: readFileSync(certFile), key: readFileSync(keyFile) } })
const bodies = new Map()

app.get('/floor/:size', async (request) => {
  const size = Number(request.params.size)
  let body = bodies.get(size)
  if (body === undefined) {
    // {"pad":"xxx…"} is 10 bytes of framing around the padding.
    body = { pad: 'x'.repeat(Math.max(0, size - 10)) }
    bodies.set(size, body)
  }
  return body
})

await app.listen({ host: '127.0.0.1', port: Number(port) })
process.stdout.write(`floor ready ${app.server.address().port}\n`)
