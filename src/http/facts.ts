import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RequestFacts, Source } from '../verification/log.js'

/**
 * What the verification log takes of a request through Fastify, when it keeps rows: the
 * client's address as the route sees it (TRUST_PROXY), the request's id, and its arrival
 * (Fastify times a reply from its first hook).
 */
export function requestFacts(
  ctx: { verifications: { log: { mode: string } } },
  source: Source,
  request: FastifyRequest,
  reply: FastifyReply,
): RequestFacts | undefined {
  if (ctx.verifications.log.mode === 'off') return undefined
  return {
    source,
    ip: request.ip,
    headers: request.headers,
    requestId: request.id,
    started: performance.now() - reply.elapsedTime,
  }
}
