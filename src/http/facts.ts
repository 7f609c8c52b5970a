import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RequestFacts, Source } from '../verification/log.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the verification log and the request's span take of it (http/facts.ts). */
    facts: RequestFacts | null
  }
}

/** What requestFacts needs of the context: whether rows are kept, whether requests are traced. */
interface FactsContext {
  verifications: { log: { mode: string } }
  telemetry?: { tracer?: unknown } | undefined
}

/**
 * What the verification log takes of a request through Fastify, when it keeps rows or the
 * request is traced: the client's address as the route sees it (TRUST_PROXY), the request's id,
 * and its arrival (Fastify times a reply from its first hook). Kept on the request, where the
 * span's end reads its verification.
 */
export function requestFacts(
  ctx: FactsContext,
  source: Source,
  request: FastifyRequest,
  reply: FastifyReply,
): RequestFacts | undefined {
  const traced = ctx.telemetry?.tracer !== undefined
  if (ctx.verifications.log.mode === 'off' && !traced) return undefined
  const facts: RequestFacts = {
    source,
    ip: request.ip,
    headers: request.headers,
    requestId: request.id,
    started: performance.now() - reply.elapsedTime,
    traced,
  }
  request.facts = facts
  return facts
}
