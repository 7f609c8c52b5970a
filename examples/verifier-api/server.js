// An API behind Tessera, twice: once with Fastify and the plugin, once with plain node:http and
// the (req, res, next) middleware, which Express and Connect take as is.
//
//   TESSERA_URL=https://127.0.0.1:8443 TESSERA_ADMIN_KEY=... TESSERA_CA=data/tls/cert.pem \
//     node examples/verifier-api/server.js
//
// TESSERA_ADMIN_KEY: an operator key of the verifier scope only
// (`npx tessera admin-key create --scope verifier`), never a full one.
//
// PORT (default 3000) serves the Fastify API, MIDDLEWARE_PORT (default 3001) the node:http one.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createVerifier, verifierMiddleware } from '@tessera/verifier'
import { verifierPlugin } from '@tessera/verifier/fastify'
import Fastify from 'fastify'

const env = process.env
if (!env.TESSERA_URL || !env.TESSERA_ADMIN_KEY) {
  process.stderr.write('verifier-api: set TESSERA_URL and TESSERA_ADMIN_KEY\n')
  process.exit(1)
}

const verifier = createVerifier({
  url: env.TESSERA_URL,
  adminKey: env.TESSERA_ADMIN_KEY,
  ca: env.TESSERA_CA ? readFileSync(env.TESSERA_CA) : undefined,
  onError: (err) => process.stderr.write(`verifier-api: ${err.message}\n`),
})

// Fastify: every route needs a token with styles:read unless its config says otherwise.
const app = Fastify()
await app.register(verifierPlugin, { verifier, scope: 'styles:read' })
app.get('/healthz', { config: { tessera: false } }, async () => ({ ok: true }))
app.get('/styles', async (request) => ({
  styles: ['streets', 'outdoors'],
  account: request.tessera.account,
}))
app.post('/styles', { config: { tessera: { scope: 'styles:write' } } }, async (request, reply) =>
  reply.code(201).send({ created: true, account: request.tessera.account }),
)

// node:http: one middleware per scope, then the handler.
const readStyles = verifierMiddleware({ verifier, scope: 'styles:read' })
const plain = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname
  if (req.method !== 'GET' || path !== '/styles') {
    res.writeHead(404, { 'content-type': 'application/json' })
    return res.end('{"message":"Not found"}')
  }
  readStyles(req, res, (err) => {
    if (err) {
      res.writeHead(500, { 'content-type': 'application/json' })
      return res.end('{"message":"Internal Server Error"}')
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ styles: ['streets', 'outdoors'], account: req.tessera.account }))
  })
})

await app.listen({ port: Number(env.PORT ?? 3000), host: '127.0.0.1' })
await new Promise((resolve) =>
  plain.listen(Number(env.MIDDLEWARE_PORT ?? 3001), '127.0.0.1', resolve),
)
process.stdout.write(
  `fastify API on http://127.0.0.1:${app.server.address().port}\n` +
    `middleware API on http://127.0.0.1:${plain.address().port}\n`,
)

const stop = async () => {
  verifier.close()
  plain.close()
  await app.close()
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
