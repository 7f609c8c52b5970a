import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, sendPage, tooManyAttempts } from '../reply.js'
import { safeNext } from '../session.js'
import type { ThrottleKey } from '../throttle.js'
import { confirmView } from '../views/confirm.js'

/** A person held on enrolment by a policy must be able to confirm, or enrolment is closed. */
const enrolment = { config: { enrolment: true } }

/**
 * "Confirm it's you" (as GitHub's sudo mode): the password or a code again, counted in the
 * sign-in throttle, before a change of who may act on the account (a sign-in method, a member,
 * a role, an invitation, the two-step policy, a token that makes tokens). People without either sign in
 * again the way they came (their provider, or a new portal link), which proves them as well.
 */
export function confirmPages(app: FastifyInstance, { ctx, throttle, sso }: DashboardDeps) {
  const { holders, factors } = ctx

  const view = async (request: FastifyRequest, next: string, error?: { message: string }) => {
    const { signedIn, session } = holderOf(request)
    const person = await ctx.members.person(session.login)
    const viaSso = person?.oidc_subject != null
    const password = person?.password != null && !(viaSso && sso.only)
    const code = (await factors.list(session.login)).some((f) => f.kind === 'totp')
    const button = viaSso ? sso.button() : undefined
    return confirmView({
      signedIn,
      next,
      password,
      code,
      ...(button === undefined ? {} : { sso: button }),
      ...(session.returnUrl === undefined ? {} : { returnUrl: session.returnUrl }),
      ...(error === undefined ? {} : { error }),
    })
  }

  app.get('/settings/confirm', enrolment, async (request, reply) => {
    const next = safeNext((request.query as { next?: string }).next)
    return sendPage(reply, await view(request, next))
  })

  app.post('/settings/confirm', enrolment, async (request, reply) => {
    const { session, account, actor } = holderOf(request)
    const f = form(request)
    const next = safeNext(f.get('next'))
    const keys: ThrottleKey[] = [
      { kind: 'user', value: session.login },
      { kind: 'ip', value: request.ip },
    ]
    const wait = await throttle.reserve(keys)
    if (wait > 0) return tooManyAttempts(reply, wait)
    const password = f.get('password') ?? ''
    const code = f.get('code') ?? ''
    const person = await ctx.members.person(session.login)
    const passwordAllowed = !(sso.only && person?.oidc_subject != null)
    const proven =
      password !== ''
        ? passwordAllowed && (await holders.checkPassword(session.login, password)) !== undefined
        : code !== '' &&
          (await factors.check(session.login, code, actor, account.username)) !== undefined
    if (!proven) {
      const error = { message: 'That password or code is not right' }
      return sendPage(reply, await view(request, next, error), 401)
    }
    await throttle.release(keys)
    await holders.prove(session)
    return redirect(reply, next)
  })
}
