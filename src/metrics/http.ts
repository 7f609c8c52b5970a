import type { FastifyInstance } from 'fastify'
import type { RequestStats } from './requests.js'

/**
 * Requests are counted by route and status (`tessera_http_requests_total` and durations) when
 * something reads them: the Prometheus listener, or OpenTelemetry's metrics export.
 */
export const countsRequests = (config: {
  metrics?: unknown
  telemetry?: { metrics?: unknown } | undefined
}) => config.metrics !== undefined || config.telemetry?.metrics !== undefined

/** What the hook needs of the context: whether metrics are on, and where requests are counted. */
interface MetricsContext {
  config: { metrics?: unknown; telemetry?: { metrics?: unknown } | undefined }
  metrics: { requests: RequestStats }
}

/**
 * Request counts and durations by route and status, when metrics are on (METRICS_PORT): a
 * server without a listener does not pay for the hook. Fastify times every reply anyway, from
 * routing to the end of the response; the route is its pattern, never the URL.
 */
export function metricsHooks(app: FastifyInstance, ctx: MetricsContext): void {
  if (!countsRequests(ctx.config)) return
  const { requests } = ctx.metrics
  app.addHook('onResponse', (request, reply, done) => {
    requests.observe(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime)
    done()
  })
}
