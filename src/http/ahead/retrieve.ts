import { performance } from 'node:perf_hooks'
import { handOver } from '../handover.js'
import { answerRetrieve } from './answers.js'
import { bodiless, type FastPath, type FastPathOptions, fastPathBase } from './base.js'

/**
 * Retrieve, answered ahead of Fastify exactly as the route answers it, when its token's
 * validation needs no waiting and nothing would refuse the request first; anything else goes
 * on to Fastify before it is counted (docs/performance.md, "Retrieve ahead of Fastify").
 */
const route = '/tokens/v2'

export function retrieveFastPath(o: FastPathOptions): FastPath {
  const { ctx } = o
  const base = fastPathBase(o)
  const { timed } = base
  return (req, res) => {
    const { url } = req
    if (req.method !== 'GET' || url === undefined || !url.startsWith('/tokens/v2?')) return false
    if (base.fastifyLogs) return false
    // Fastify times a request from before its hooks: parsing and validation included.
    const start = timed ? performance.now() : 0
    if (o.refusing()) return false
    if (o.trustProxy && req.headers['x-forwarded-proto'] !== 'https') return false
    const token = o.parseQuery(url.slice(11)).access_token
    if (token === undefined || token === '') return false
    // A token in the Authorization header as well: the route's to compare (http/guard.ts).
    if (req.headers.authorization !== undefined) return false
    const validation = ctx.tokens.validate(token)
    // Behind a proxy, a token not valid is counted against the client's address from
    // X-Forwarded-For: Fastify's to work out.
    if (validation instanceof Promise || (o.trustProxy && validation.code !== 'TokenValid')) {
      handOver(req, validation)
      return false
    }
    // Read now, a request without a body leaves Node nothing to drain after the answer (seven
    // process.nextTick calls); it then never emits 'end' or 'close', which nothing here awaits.
    if (bodiless(req)) req.read()
    const { headers, send, fail, facts: factsOf } = base.answering(req, res, 'GET', route, start)
    const ip = req.socket.remoteAddress
    const facts = factsOf('retrieve', ip)
    try {
      const body = answerRetrieve(ctx, validation, ip, headers, undefined, facts)
      if (body instanceof Promise) {
        body.then((b) => send(200, b), fail).catch(() => res.destroy())
      } else send(200, body)
    } catch (err) {
      fail(err)
    }
    return true
  }
}
