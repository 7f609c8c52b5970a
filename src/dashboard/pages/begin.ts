import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SignInMethod } from '../../audit/events.js'
import type { AppContext } from '../../context.js'
import type { SignedInPerson } from '../../people/sessions.js'
import { redirect } from '../reply.js'
import { sessionId, setSessionCookie } from '../session.js'

/**
 * A new session (ending the one the browser had) in the person's first account, then the page
 * asked for; a person in several accounts first picks one.
 */
export async function beginSession(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  person: SignedInPerson,
  method: SignInMethod,
  to: string,
  returnUrl?: string,
) {
  const { holders } = ctx
  const old = sessionId(request)
  const previous = old === undefined ? undefined : await holders.session(old)
  if (previous !== undefined) await holders.endSession(previous)
  const [first] = person.accounts
  if (first === undefined) throw new Error('a session needs an account')
  const { id } = await holders.startSession(person.login, first, method, returnUrl)
  setSessionCookie(reply, id)
  if (person.accounts.length > 1) {
    return redirect(reply, `/account/accounts?next=${encodeURIComponent(to)}`)
  }
  return redirect(reply, to)
}
