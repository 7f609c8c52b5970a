import type { FastifyRequest } from 'fastify'
import type { Actor, SignInMethod } from '../audit/events.js'

/** The actor of a request for the audit log: who, plus the client address and request id. */
export function actorOf(request: FastifyRequest, who: Omit<Actor, 'address' | 'requestId'>): Actor {
  return { ...who, address: request.ip, requestId: String(request.id) }
}

/** The token that authorised an API request (a tk has no id). */
export function tokenActor(request: FastifyRequest): Actor {
  const principal = request.principal
  if (principal === null) return actorOf(request, { type: 'anonymous' })
  return actorOf(request, {
    type: 'token',
    usage: principal.usage,
    ...(principal.tokenId === undefined ? {} : { id: principal.tokenId }),
  })
}

/**
 * A dashboard session, named by the first characters of its stored hash (not its id), with the
 * person and how they signed in.
 */
export const sessionActor = (
  request: FastifyRequest,
  session: { key: string; login: string; method: SignInMethod },
): Actor =>
  actorOf(request, {
    type: 'session',
    id: session.key.slice(0, 16),
    login: session.login,
    method: session.method,
  })
