import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import type { preParsingHookHandler } from 'fastify'
import type { Validation } from '../tokens/validator.js'

/**
 * Validations a fast path began and left to Fastify (a token not cached yet, not valid, or not
 * the plain case of a create): the route, or the guard, goes on with them. A request validates
 * its token once: a validation counts the token's usage, and a bad signature is not checked
 * twice.
 */
export const handedOver = new WeakMap<IncomingMessage, Validation | Promise<Validation>>()

/**
 * Bodies the create fast path read and then left to Fastify: the create route's preParsing hook
 * (`replayBody`) hands Fastify this copy in place of the request, which has been read.
 */
export const replays = new WeakMap<IncomingMessage, Buffer>()

/** The create route's preParsing hook: the body the fast path read, when it read one. */
export const replayBody: preParsingHookHandler = (request, _reply, payload, done) => {
  const body = replays.get(request.raw)
  if (body === undefined) return done(null, payload)
  replays.delete(request.raw)
  done(null, Readable.from([body]))
}
