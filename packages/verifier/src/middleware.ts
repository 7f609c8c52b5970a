import type { IncomingMessage, ServerResponse } from 'node:http'
import { checkCost, type Verification, type VerifiedToken } from './answers.js'
import { headerValue, type Refusal, refusalFor, tokenFrom } from './http.js'
import type { Verifier } from './verifier.js'

declare module 'node:http' {
  interface IncomingMessage {
    /** The verified token, set by the Tessera middleware before `next()`. */
    tessera?: VerifiedToken
  }
}

export interface MiddlewareOptions {
  verifier: Verifier
  /** Scope(s) every request through this middleware needs. */
  scope?: string | readonly string[]
  /** Credits each request costs (tokens with credits). Default 1; checked when the middleware is made. */
  cost?: number
  /** Where the token is; default: `Authorization: Bearer`, else the `access_token` query parameter. */
  getToken?: (req: IncomingMessage) => string | undefined
  /**
   * The client's address, for tokens restricted to IP ranges. Default: `req.ip` when the
   * framework sets it (Express, per its `trust proxy` setting), else the socket's address.
   * Behind proxies you trust, give the address they report (the right one of X-Forwarded-For).
   */
  clientIp?: (req: IncomingMessage) => string | undefined
}

export type NextFunction = (err?: unknown) => void

/** Writes a refusal as JSON `{message, details}` with its status. */
export function sendRefusal(res: ServerResponse, refusal: Refusal): void {
  res.statusCode = refusal.status
  for (const [name, value] of Object.entries(refusal.headers)) res.setHeader(name, value)
  res.setHeader('content-type', 'application/json; charset=utf-8')
  res.end(JSON.stringify(refusal.body))
}

/**
 * A Connect/Express-style middleware `(req, res, next)`: a valid token sets `req.tessera` and
 * calls `next()`; otherwise it answers 401 (no or bad token), 403 (a scope missing, a URL not
 * allowed), 429 (no credits left, or over a rate limit) or 503 (Tessera cannot be asked) with a JSON `{message, details}` body.
 */
export function verifierMiddleware(options: MiddlewareOptions) {
  const { verifier, getToken } = options
  const scope = options.scope
  // A bad cost throws here, at setup, not when a request meets a metered token.
  const cost = checkCost(options.cost)
  return function tesseraMiddleware(req: IncomingMessage, res: ServerResponse, next: NextFunction) {
    const token = getToken === undefined ? tokenFrom(req.headers, req.url) : getToken(req)
    if (token === undefined) return sendRefusal(res, refusalFor('TokenMissing'))
    const request = {
      scope,
      cost,
      origin: headerValue(req.headers.origin),
      referer: headerValue(req.headers.referer),
      requestId: headerValue(req.headers['x-request-id']),
      ip:
        options.clientIp === undefined
          ? ((req as { ip?: string }).ip ?? req.socket?.remoteAddress)
          : options.clientIp(req),
    }
    const done = (answer: Verification) => {
      if (!answer.valid) return sendRefusal(res, refusalFor(answer.reason))
      req.tessera = answer
      next()
    }
    const cached = verifier.verifyCached(token, request)
    if (cached !== undefined) return done(cached)
    verifier.verify(token, request).then(done, next)
  }
}
