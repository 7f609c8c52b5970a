import { performance } from 'node:perf_hooks'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Span, Tracer, Verdict } from '../telemetry/index.js'
import type { VerificationRow } from '../verification/log.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's server span, when traced and sampled (docs/telemetry.md). */
    span: Span | undefined
  }
}

const none: Verdict = {}

/** What a request's span says of its verification: the row's ids and names, never a string. */
export const verdictOf = (row: VerificationRow | undefined): Verdict =>
  row === undefined
    ? none
    : { outcome: row.outcome, account: row.account, tokenId: row.tokenId, source: row.source }

/**
 * A server span per request through Fastify, when traces are exported: begun in the first hook
 * (continuing the caller's `traceparent`), ended once the answer is out, with what its
 * verification came to (http/facts.ts). The fast paths make theirs themselves (ahead/base.ts).
 * Probes (`skip`) are not traced: a load balancer's every second would drown the traces.
 */
export function tracingHooks(
  app: FastifyInstance,
  tracer: Tracer | undefined,
  skip: (request: FastifyRequest) => boolean,
) {
  if (tracer === undefined) return
  app.decorateRequest('span', undefined)
  app.addHook('onRequest', (request, reply, done) => {
    if (skip(request)) return done()
    const started = performance.now() - reply.elapsedTime
    request.span = tracer.startSpan({
      traceparent: request.headers.traceparent,
      tracestate: request.headers.tracestate,
      startNs: tracer.clock(started),
      attributes: {
        method: request.method,
        route: request.routeOptions.url,
        scheme: request.protocol,
        clientAddress: request.ip,
        serverPort: request.socket.localPort,
      },
    })
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    const row = request.facts?.row
    tracer.end(request.span, tracer.clock(performance.now()), verdictOf(row), reply.statusCode)
    done()
  })
}
