import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify'
import { checkCost, type Verification, type VerifiedToken } from './answers.js'
import { headerValue, refusalFor, tokenFrom } from './http.js'
import type { Verifier } from './verifier.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified token (null on a route the plugin skips). */
    tessera: VerifiedToken | null
  }
  interface FastifyContextConfig {
    /**
     * The scope(s) this route needs and the credits it costs, or false: the route is open (no
     * token checked).
     */
    tessera?: { scope?: string | readonly string[]; cost?: number } | false
  }
}

export interface VerifierPluginOptions {
  verifier: Verifier
  /** Scope(s) every route needs unless its `config.tessera.scope` says otherwise. */
  scope?: string | readonly string[]
  /**
   * Credits a request costs (tokens with credits), unless `config.tessera.cost` says otherwise.
   * Default 1. Checked when the plugin (or a route) is registered: a whole number, 0 or more.
   */
  cost?: number
  /** Where the token is; default: `Authorization: Bearer`, else the `access_token` query parameter. */
  getToken?: (request: FastifyRequest) => string | undefined
  /** The client's address for tokens restricted to IP ranges; default `request.ip` (trustProxy). */
  clientIp?: (request: FastifyRequest) => string | undefined
}

function refuse(reply: FastifyReply, reason: Parameters<typeof refusalFor>[0]) {
  const refusal = refusalFor(reason)
  reply.code(refusal.status).headers(refusal.headers).send(refusal.body)
}

/**
 * Checks the token of every request of the context it is registered in (it is not encapsulated,
 * like a plugin wrapped by fastify-plugin): a valid token sets `request.tessera`; otherwise the
 * request is answered 401, 403, 429 (no credits left, or over a rate limit) or 503 with `{message, details}`. A route
 * opts out with `config: { tessera: false }` and asks for its own scopes and cost with
 * `config: { tessera: { scope, cost } }`.
 */
export const verifierPlugin: FastifyPluginCallback<VerifierPluginOptions> = (
  app,
  options,
  done,
) => {
  const { verifier, getToken } = options
  try {
    checkCost(options.cost)
  } catch (err) {
    return done(err as Error)
  }
  // A route's cost is checked as the route is added, not when a request meets a metered token.
  app.addHook('onRoute', (route) => {
    const config = (route.config as { tessera?: { cost?: number } | false } | undefined)?.tessera
    if (config) checkCost(config.cost)
  })
  if (!app.hasRequestDecorator('tessera')) app.decorateRequest('tessera', null)
  app.addHook('onRequest', (request, reply, next) => {
    // A route that does not exist answers its 404, token or not.
    if (request.is404) return next()
    const config = request.routeOptions.config.tessera
    if (config === false) return next()
    const token =
      getToken === undefined ? tokenFrom(request.headers, request.url) : getToken(request)
    if (token === undefined) return refuse(reply, 'TokenMissing')
    const checks = {
      scope: config?.scope ?? options.scope,
      cost: config?.cost ?? options.cost ?? 1,
      origin: headerValue(request.headers.origin),
      referer: headerValue(request.headers.referer),
      requestId: headerValue(request.headers['x-request-id']),
      // Fastify's own `trustProxy` decides request.ip; clientIp overrides it.
      ip: options.clientIp === undefined ? request.ip : options.clientIp(request),
    }
    const settle = (answer: Verification) => {
      if (!answer.valid) return refuse(reply, answer.reason)
      request.tessera = answer
      next()
    }
    const cached = verifier.verifyCached(token, checks)
    if (cached !== undefined) return settle(cached)
    verifier.verify(token, checks).then(settle, next)
  })
  done()
}

// What fastify-plugin would set: run in the registering context, under a readable name.
Object.assign(verifierPlugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: '@tessera/verifier',
  [Symbol.for('plugin-meta')]: { name: '@tessera/verifier', fastify: '5.x' },
})
