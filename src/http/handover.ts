import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import type { preParsingHookHandler } from 'fastify'
import type { Validation } from '../tokens/validator.js'

// Keyed by the request, so that they go with it; only this module reads or writes them.
const validations = new WeakMap<IncomingMessage, Validation | Promise<Validation>>()
const bodies = new WeakMap<IncomingMessage, Buffer>()

/**
 * Leaves to Fastify a validation a fast path began: the guard or the route goes on with it, so
 * that a request counts its token's use once and a bad signature is not checked twice.
 */
export function handOver(req: IncomingMessage, validation: Validation | Promise<Validation>) {
  // Fastify's hooks may still refuse the request: a failed lookup is then nobody's.
  if (validation instanceof Promise) validation.catch(() => {})
  validations.set(req, validation)
}

/** The validation a fast path handed over with this request, if it did. */
export const handedOver = (req: IncomingMessage) => validations.get(req)

/** Leaves to Fastify a body the create fast path read: `replayBody` gives it back. */
export function handOverBody(req: IncomingMessage, body: Buffer) {
  bodies.set(req, body)
}

/** The create route's preParsing hook: the body the fast path read, when it read one. */
export const replayBody: preParsingHookHandler = (request, _reply, payload, done) => {
  const body = bodies.get(request.raw)
  if (body === undefined) return done(null, payload)
  bodies.delete(request.raw)
  done(null, Readable.from([body]))
}
