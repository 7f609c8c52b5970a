import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
} from 'fastify'
import Fastify from 'fastify'
import type { Logger } from 'pino'
import { type Config, configuredOrigin } from './config.js'
import type { AppContext } from './context.js'
import { dashboard } from './dashboard/pages/plugin.js'
import { isUnavailable } from './db/database.js'
import { ApiError } from './errors.js'
import { adminDocs, adminRoutes } from './http/admin/routes.js'
import { answerAhead } from './http/ahead/front.js'
import { parseQuery } from './http/ahead/query.js'
import { docsPage } from './http/docs-page.js'
import { guard } from './http/guard.js'
import { firstHeaders, withoutCors } from './http/headers.js'
import { closeSilentConnections, fastifyLimits, limits, nodeServerOptions } from './http/limits.js'
import { openapi } from './http/openapi.js'
import { OverloadDetector } from './http/overload.js'
import { redactSecretRoutes } from './http/redact.js'
import { exchangeRoutes } from './http/routes/exchange.js'
import { healthRoutes, probePaths } from './http/routes/health.js'
import { leakRoutes } from './http/routes/leaks.js'
import { retrieveRoute } from './http/routes/retrieve.js'
import { scopeRoutes } from './http/routes/scopes.js'
import { tokenRoutes } from './http/routes/tokens.js'
import { leakTag, tokenApiTag } from './http/schemas.js'
import { tracingHooks } from './http/tracing.js'
import { parseBody, validatorCompiler } from './http/validation.js'
import { randomAlnum } from './ids.js'
import { metricsHooks } from './metrics/http.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The origin written into Link headers: PUBLIC_URL, or https://HOST:<listening port>. */
    readonly publicUrl: string
  }
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,64}$/

/** `<8 random characters of this app>-<counter>`, unless the request brings a fitting id. */
function requestIds() {
  const prefix = randomAlnum(8)
  let n = 0
  return (request: { headers: Record<string, string | string[] | undefined> }) => {
    const given = request.headers['x-request-id']
    if (typeof given === 'string' && requestIdPattern.test(given)) return given
    return `${prefix}-${(++n).toString(36)}`
  }
}
const isProbe = (request: FastifyRequest) => probePaths.has(request.routeOptions.url ?? '')

/**
 * What the error handler answers to an error: the contract's own errors as they are, Fastify's
 * refusals of a body as the contract's 422, an unreachable database as 503, anything else as a
 * logged 500.
 */
function errorOf(ctx: AppContext, error: unknown, log: FastifyBaseLogger | Logger | undefined) {
  if (error instanceof ApiError) return error
  const { statusCode, message } = (error ?? {}) as { statusCode?: number; message?: string }
  if (statusCode !== undefined && statusCode >= 400 && statusCode < 500) {
    return new ApiError('invalidResources', message)
  }
  if (isUnavailable(error)) {
    ctx.metrics.databaseErrors.request++
    log?.warn({ err: message }, 'database unavailable')
    return new ApiError('unavailable')
  }
  log?.error({ err: error }, 'unhandled error')
  return new ApiError('internal')
}

export interface AppOptions {
  logger?: Logger
  https?: { cert: Buffer; key: Buffer }
}

/**
 * Fastify's `trustProxy` for TRUST_PROXY: the last `n` hops (a function: Fastify's own number
 * form trusts no hop), or the proxies' addresses; never `true`, which would take the first
 * X-Forwarded-For entry, the one the client wrote, for the client's address.
 */
const fastifyTrust = (proxy: Config['http']['proxy']) =>
  typeof proxy === 'number' ? (_address: string, hop: number) => hop < proxy : (proxy ?? false)

export function buildApp(ctx: AppContext, options: AppOptions = {}): FastifyInstance {
  const log = options.logger
  const requestLogging = log?.isLevelEnabled('info') === true
  const logOf = (request: FastifyRequest) => (requestLogging ? request.log : (log ?? request.log))
  const requestId = requestIds()
  const app = createFastify(ctx.config.http, options, requestLogging, requestId)
  // Before any route: a route with a `:secret` parameter is redacted from every log line.
  redactSecretRoutes(app)

  // First: a span starts before any other hook's work, and sees every refusal.
  tracingHooks(app, ctx.telemetry?.tracer, isProbe)
  app.server.maxHeadersCount = limits.maxHeaders
  closeSilentConnections(app.server)
  metricsHooks(app, ctx)
  const overload = new OverloadDetector(ctx.config.shedDelayMs)
  app.addHook('onClose', async () => overload.close())
  decoratePublicUrl(app, ctx.config.http)
  app.decorateRequest('principal', null)
  app.decorateRequest('account', null)
  app.decorateRequest('facts', null)
  app.setValidatorCompiler(validatorCompiler)
  readJsonBodies(app)

  // CORS, nosniff, and HSTS where the client came over HTTPS (here, or to TRUST_PROXY's proxy).
  const first = firstHeaders(options.https !== undefined || ctx.config.http.trustProxy)
  refuseEarly(app, ctx, overload, first)
  // Retrieve and create skip Fastify's work whenever they can (http/ahead/), and leave to it
  // every request the hook above would refuse, and those that come while it closes.
  let closing = false
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  answerAhead(app.server, {
    ctx,
    parseQuery,
    first,
    refusing: () => !ctx.ready || overload.shedding || closing,
    trustProxy: ctx.config.http.trustProxy,
    requestLog: requestLogging ? app.log : undefined,
    requestId,
    errorOf: (error: unknown, log: FastifyBaseLogger | undefined) =>
      errorOf(ctx, error, log ?? options.logger),
  })

  // Authenticated routes (those naming a scope) run the guard first, before the body is read.
  const authenticate = guard(ctx)
  app.addHook('onRoute', (route) => {
    if ((route.config as { scope?: string } | undefined)?.scope === undefined) return
    const own = route.onRequest === undefined ? [] : [route.onRequest].flat()
    route.onRequest = [authenticate, ...own]
  })
  answerPreflight(app)
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const answer = errorOf(ctx, error, logOf(request))
    return reply.code(answer.statusCode).send(answer.toJSON())
  })
  app.setNotFoundHandler(async (_request, reply) => {
    const notFound = new ApiError('notFound')
    return reply.code(notFound.statusCode).send(notFound.toJSON())
  })
  registerRoutes(app, ctx)
  return app
}

function createFastify(
  http: Config['http'],
  options: AppOptions,
  requestLogging: boolean,
  requestId: ReturnType<typeof requestIds>,
): FastifyInstance {
  return Fastify({
    // Fastify is given the logger only to log requests (at info). Above info, it would still do
    // work for every request (a child logger, the request-logging hooks) to log nothing.
    ...(requestLogging ? { loggerInstance: options.logger } : { logger: false }),
    // Fastify's types make `https` select a different server type; the app is the same.
    ...(options.https
      ? { https: { ...nodeServerOptions, ...options.https } }
      : { http: nodeServerOptions }),
    ...fastifyLimits,
    trustProxy: fastifyTrust(http.proxy),
    // Request ids name a request in the log and the audit log: unique across restarts and
    // instances, or the caller's own `X-Request-Id` when it is a plain token of at most 64.
    requestIdHeader: false,
    genReqId: requestId,
    routerOptions: {
      ignoreTrailingSlash: true,
      // A path parameter past this (decoded) length matches no route: the namespace API's
      // identifiers are up to 256 characters, and one longer must be told so (422), not 404.
      maxParamLength: 512,
      ignoreDuplicateSlashes: true,
      querystringParser: parseQuery,
    },
    // A URL the router cannot even decode names no user and no token.
    frameworkErrors: (_error, _request, reply) => {
      const notFound = new ApiError('notFound')
      const first = firstHeaders(options.https !== undefined || http.trustProxy)
      ;(reply as FastifyReply).code(notFound.statusCode).headers(first).send(notFound.toJSON())
    },
  }) as unknown as FastifyInstance
}

/** `app.publicUrl`: known once listening (PORT=0 picks the port then); asked on every paged list. */
function decoratePublicUrl(app: FastifyInstance, http: Config['http']) {
  let origin: string | undefined
  app.decorate('publicUrl', {
    getter() {
      if (http.publicUrl) return http.publicUrl
      if (origin !== undefined) return origin
      const address = app.server.address()
      const port = typeof address === 'object' && address !== null ? address.port : http.port
      const url = configuredOrigin(http, port)
      if (address !== null) origin = url
      return url
    },
  })
}

/** Every body is read as JSON, whatever its declared type; an empty body is no body. */
function readJsonBodies(app: FastifyInstance) {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    let parsed: unknown
    try {
      parsed = parseBody(body as string)
    } catch (err) {
      return done(err as ApiError, undefined)
    }
    done(null, parsed)
  })
}

/** What every request is refused before routing: plain HTTP behind a proxy, not ready, overload. */
function refuseEarly(
  app: FastifyInstance,
  ctx: AppContext,
  overload: OverloadDetector,
  first: Record<string, string>,
) {
  const { http } = ctx.config
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(first)
    // Load balancers probe the instance itself, over plain HTTP, and ask when it is not ready.
    if (http.trustProxy && request.headers['x-forwarded-proto'] !== 'https' && !isProbe(request)) {
      return done(new ApiError('httpsRequired'))
    }
    if (!ctx.ready && !isProbe(request)) {
      return done(new ApiError('unavailable', 'the database is not reachable yet'))
    }
    if (overload.shedding && !isProbe(request)) {
      reply.header('retry-after', '1')
      return done(new ApiError('unavailable', 'the server is overloaded; retry in a second'))
    }
    done()
  })
}

/** The admin API's paths (the router also takes doubled slashes): no CORS there. */
const adminPath = /^\/+admin\/v1(?:[/?]|$)/

function answerPreflight(app: FastifyInstance) {
  app.options('*', async (request, reply) => {
    // An operator key belongs on servers: a browser is granted nothing on the admin API.
    if (adminPath.test(request.url)) return withoutCors(reply).code(204).send()
    reply
      .code(204)
      .header('Access-Control-Allow-Methods', 'GET, POST, PATCH, DELETE, OPTIONS')
      .header(
        'Access-Control-Allow-Headers',
        request.headers['access-control-request-headers'] ?? 'Content-Type',
      )
      .header('Access-Control-Max-Age', '86400')
      .send()
  })
}

function registerRoutes(app: FastifyInstance, ctx: AppContext) {
  // The account dashboard: its parsers, hooks and error pages stay inside its plugin.
  app.register(dashboard, { prefix: '/account', ctx })
  app.get('/', (_request, reply) => reply.redirect('/account', 302))
  openapi(app, {
    version: '0.1.0',
    tags: [tokenApiTag, leakTag, ...adminDocs.tags],
    securitySchemes: adminDocs.securitySchemes,
  })
  docsPage(app)
  healthRoutes(app, ctx)
  retrieveRoute(app, ctx)
  tokenRoutes(app, ctx)
  exchangeRoutes(app, ctx)
  scopeRoutes(app, ctx)
  leakRoutes(app, ctx)
  // The operator's API: its own authentication (operator keys) and hooks, under /admin/v1.
  adminRoutes(app, ctx)
}
