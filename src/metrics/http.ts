import type { FastifyInstance } from 'fastify'
import type { RequestStats } from './requests.js'

/** What the hook needs of the context: whether metrics are on, and where requests are counted. */
interface MetricsContext {
  config: { metrics?: unknown }
  metrics: { requests: RequestStats }
}

/**
 * Request counts and durations by route and status, when metrics are on (METRICS_PORT): a
 * server without a listener does not pay for the hook. Fastify times every reply anyway, from
 * routing to the end of the response; the route is its pattern, never the URL.
 */
export function metricsHooks(app: FastifyInstance, ctx: MetricsContext): void {
  if (ctx.config.metrics === undefined) return
  const { requests } = ctx.metrics
  app.addHook('onResponse', (request, reply, done) => {
    requests.observe(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime)
    done()
  })
}
