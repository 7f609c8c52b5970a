import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { FastPath, FastPathOptions, Listener } from './base.js'
import { createFastPath } from './create.js'
import { retrieveFastPath } from './retrieve.js'

/** Answers retrieves and creates ahead of Fastify whenever they can be (docs/performance.md). */
export function answerAhead(server: Server, o: FastPathOptions) {
  const retrieve = retrieveFastPath(o)
  const create = createFastPath(o)
  inFront(server, (req, res, fastify) => retrieve(req, res, fastify) || create(req, res, fastify))
}

/**
 * Puts `fast` in front of the server's request listener, Fastify's: a request it does not take
 * goes on to Fastify unchanged (or later, through the listener it is given). Fastify adds
 * exactly one listener; anything else is refused here rather than bypassed.
 */
export function inFront(server: Server, fast: FastPath) {
  const listeners = server.listeners('request') as Listener[]
  const [fastify] = listeners
  if (listeners.length !== 1 || fastify === undefined) {
    throw new Error(`the server has ${listeners.length} request listeners, not Fastify's alone`)
  }
  const next: Listener = (req, res) => fastify.call(server, req, res)
  server.removeAllListeners('request')
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!fast(req, res, next)) next(req, res)
  })
}
