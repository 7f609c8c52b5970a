import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import Fastify from 'fastify'
import type { Logger } from 'pino'
import { configuredOrigin } from './config.js'
import type { AppContext } from './context.js'
import { dashboard } from './dashboard/plugin.js'
import { isUnavailable } from './db/database.js'
import { ApiError } from './errors.js'
import { guard, rateLimitHeaders } from './http/guard.js'
import { openapi } from './http/openapi.js'
import { retrieveRoute } from './http/routes/retrieve.js'
import { scopeRoutes } from './http/routes/scopes.js'
import { tokenRoutes } from './http/routes/tokens.js'
import { validatorCompiler } from './http/validation.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The origin written into Link headers: PUBLIC_URL, or https://HOST:<listening port>. */
    readonly publicUrl: string
  }
}

/**
 * Hides the value of `access_token` and the secret of a dashboard setup link, so that no log
 * line ever holds a token string or a link that sets a password.
 */
export const redactUrl = (url: string) =>
  url
    .replace(/([?&]access_token=)[^&#]*/gi, '$1[redacted]')
    .replace(/(\/+account\/+setup\/+)[^/?#]*/i, '$1[redacted]')

const decode = (text: string) => {
  if (!text.includes('%') && !text.includes('+')) return text
  const spaced = text.replaceAll('+', ' ')
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced // a malformed escape is kept as given
  }
}

/**
 * A repeated query parameter takes its first value. A plain object (a null-prototype one is a
 * slow dictionary in V8), so `__proto__` is never taken as a name; no parameter has that name.
 */
export function parseQuery(query: string): Record<string, string> {
  const out: Record<string, string> = {}
  let start = 0
  while (start <= query.length) {
    let end = query.indexOf('&', start)
    if (end === -1) end = query.length
    if (end > start) {
      const eq = query.indexOf('=', start)
      const named = eq !== -1 && eq < end
      const key = decode(query.slice(start, named ? eq : end))
      if (key !== '__proto__' && !Object.hasOwn(out, key)) {
        out[key] = named ? decode(query.slice(eq + 1, end)) : ''
      }
    }
    start = end + 1
  }
  return out
}

const exposed = ['Link', ...rateLimitHeaders].join(', ')

export interface AppOptions {
  logger?: Logger
  https?: { cert: Buffer; key: Buffer }
}

export function buildApp(ctx: AppContext, options: AppOptions = {}): FastifyInstance {
  const { http } = ctx.config
  const log = options.logger
  const requestLogging = log?.isLevelEnabled('info') === true
  const logOf = (request: FastifyRequest) => (requestLogging ? request.log : (log ?? request.log))
  const app = Fastify({
    // Fastify is given the logger only to log requests (at info). Above info, it would still do
    // work for every request (a child logger, the request-logging hooks) to log nothing.
    ...(requestLogging ? { loggerInstance: log } : { logger: false }),
    // Fastify's types make `https` select a different server type; the app is the same.
    ...(options.https ? { https: options.https } : {}),
    trustProxy: http.trustProxy,
    bodyLimit: 1024 * 1024,
    routerOptions: {
      ignoreTrailingSlash: true,
      ignoreDuplicateSlashes: true,
      querystringParser: parseQuery,
    },
    // A URL the router cannot even decode names no user and no token.
    frameworkErrors: (_error, _request, reply) => {
      const notFound = new ApiError('notFound')
      ;(reply as FastifyReply)
        .code(notFound.statusCode)
        .header('Access-Control-Allow-Origin', '*')
        .send(notFound.toJSON())
    },
  }) as unknown as FastifyInstance

  // Known once listening (PORT=0 picks the port then): asked on every paged list.
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
  app.decorateRequest('principal', null)
  app.decorateRequest('account', null)
  app.setValidatorCompiler(validatorCompiler)

  // Every body is read as JSON, whatever its declared type; an empty body is no body.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined)
    try {
      done(null, JSON.parse(body as string))
    } catch {
      done(new ApiError('invalidResources', 'the body is not valid JSON'), undefined)
    }
  })

  // Lowercase names and string values: Node and Fastify take them as they are, which halves
  // the cost of the headers every response carries.
  const cors = { 'access-control-allow-origin': '*', 'access-control-expose-headers': exposed }
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(cors)
    if (http.trustProxy && request.headers['x-forwarded-proto'] !== 'https') {
      return done(new ApiError('httpsRequired'))
    }
    if (!ctx.ready) return done(new ApiError('unavailable', 'the database is not reachable yet'))
    done()
  })
  // Authenticated routes (those naming a scope) run the guard first, before the body is read.
  const authenticate = guard(ctx)
  app.addHook('onRoute', (route) => {
    if ((route.config as { scope?: string } | undefined)?.scope === undefined) return
    const own = route.onRequest === undefined ? [] : [route.onRequest].flat()
    route.onRequest = [authenticate, ...own]
  })

  app.options('*', async (request, reply) => {
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

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return reply.code(error.statusCode).send(error.toJSON())
    // Fastify's own refusals of a body (too large, unreadable) are the contract's 422.
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      const invalid = new ApiError('invalidResources', error.message)
      return reply.code(invalid.statusCode).send(invalid.toJSON())
    }
    if (isUnavailable(error)) {
      logOf(request).warn({ err: error.message }, 'database unavailable')
      const unavailable = new ApiError('unavailable')
      return reply.code(unavailable.statusCode).send(unavailable.toJSON())
    }
    logOf(request).error({ err: error }, 'unhandled error')
    const internal = new ApiError('internal')
    return reply.code(internal.statusCode).send(internal.toJSON())
  })
  app.setNotFoundHandler(async (_request, reply) => {
    const notFound = new ApiError('notFound')
    return reply.code(notFound.statusCode).send(notFound.toJSON())
  })

  // The account dashboard: its parsers, hooks and error pages stay inside its plugin.
  app.register(dashboard, { prefix: '/account', ctx })
  app.get('/', (_request, reply) => reply.redirect('/account', 302))

  openapi(app, { version: '0.1.0' })
  retrieveRoute(app, ctx)
  tokenRoutes(app, ctx)
  scopeRoutes(app, ctx)
  return app
}
