import type { FastifyInstance } from 'fastify'
import { actorOf } from '../../http/actor.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, sendPage, tooManyAttempts } from '../reply.js'
import { clearSessionCookie, safeNext, setPendingCookie } from '../session.js'
import type { ThrottleKey } from '../throttle.js'
import { signInView } from '../views/auth.js'
import { beginSession } from './begin.js'
import { passkeyPlace } from './passkeys.js'
import { setupPages, signUpPages } from './setup.js'

const signedOut = { config: { signedOut: true } }

/** Sign in and out, setup links and open sign-up: where sessions begin and end. */
export function signInPages(app: FastifyInstance, deps: DashboardDeps) {
  const { ctx, throttle, sso } = deps
  const { holders } = ctx
  const signUp = ctx.config.dashboard.signup

  app.get('/sign-in', signedOut, async (request, reply) => {
    const next = safeNext((request.query as { next?: string }).next)
    // Discovery under way (the first moments after start): wait for it a little.
    await sso.ready()
    const passkeys = passkeyPlace(request, ctx.config.http)
    return sendPage(reply, signInView({ next, signUp, sso: sso.button(), passkeys }))
  })

  app.post('/sign-in', signedOut, async (request, reply) => {
    const f = form(request)
    const username = (f.get('username') ?? '').trim().toLowerCase()
    const next = safeNext(f.get('next'))
    const keys: ThrottleKey[] = [
      // No username is longer than 32 characters: a longer one needs no key of its own.
      { kind: 'user', value: username.slice(0, 33) },
      { kind: 'ip', value: request.ip },
    ]
    // Taken before the password is checked: concurrent guesses cannot share one check.
    const wait = await throttle.reserve(keys)
    if (wait > 0) return tooManyAttempts(reply, wait)
    const anonymous = actorOf(request, { type: 'anonymous' })
    const password = f.get('password') ?? ''
    const person = await holders.signIn(username, password, anonymous, {
      ssoOnly: sso.only,
      secondFactor: (login) => ctx.factors.has(login),
    })
    if (person === undefined) {
      const error = { message: 'Wrong username or password' }
      const passkeys = passkeyPlace(request, ctx.config.http)
      const view = signInView({ username, next, error, signUp, sso: sso.button(), passkeys })
      return sendPage(reply, view, 401)
    }
    await throttle.release(keys)
    if (person.secondFactor) {
      // The password was right: the second step, on a page of its own (5 minutes).
      setPendingCookie(reply, await ctx.factors.beginPending(person.login, next))
      return redirect(reply, '/account/sign-in/verify')
    }
    await throttle.clear({ kind: 'user', value: person.login })
    return beginSession(ctx, request, reply, person, 'password', next)
  })

  app.post('/sign-out', async (request, reply) => {
    const { session, actor } = holderOf(request)
    await holders.endSession(session, actor)
    clearSessionCookie(reply)
    return redirect(reply, '/account/sign-in')
  })

  app.post('/sign-out-everywhere', async (request, reply) => {
    const { session, actor } = holderOf(request)
    await holders.endAllSessions(session, actor)
    clearSessionCookie(reply)
    return redirect(reply, '/account/sign-in')
  })
  setupPages(app, deps)
  signUpPages(app, deps)
}
