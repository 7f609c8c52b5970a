import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AccountError } from '../../accounts/service.js'
import { actorOf } from '../../http/actor.js'
import { HolderError, type SignedInPerson } from '../../people/sessions.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, sendPage, tooManyAttempts } from '../reply.js'
import { clearSessionCookie, safeNext, setPendingCookie } from '../session.js'
import type { ThrottleKey } from '../throttle.js'
import { messageView, setupView, signInView, signUpView } from '../views/auth.js'
import { beginSession } from './begin.js'

const signedOut = { config: { signedOut: true } }

/** Sign in and out, setup links and open sign-up: where sessions begin and end. */
export function signInPages(app: FastifyInstance, { ctx, throttle, sso }: DashboardDeps) {
  const { holders } = ctx
  const signUp = ctx.config.dashboard.signup

  const begin = (
    request: FastifyRequest,
    reply: FastifyReply,
    person: SignedInPerson,
    to: string,
  ) => beginSession(ctx, request, reply, person, 'password', to)

  app.get('/sign-in', signedOut, async (request, reply) => {
    const next = safeNext((request.query as { next?: string }).next)
    // Discovery under way (the first moments after start): wait for it a little.
    await sso.ready()
    return sendPage(reply, signInView({ next, signUp, sso: sso.button() }))
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
      return sendPage(reply, signInView({ username, next, error, signUp, sso: sso.button() }), 401)
    }
    await throttle.release(keys)
    if (person.secondFactor) {
      // The password was right: the second step, on a page of its own (5 minutes).
      setPendingCookie(reply, await ctx.factors.beginPending(person.login, next))
      return redirect(reply, '/account/sign-in/verify')
    }
    await throttle.clear({ kind: 'user', value: person.login })
    return begin(request, reply, person, next)
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

  const linkGone = (reply: FastifyReply) =>
    sendPage(
      reply,
      messageView('Link no longer valid', [
        'This setup link has been used, replaced by a newer one, or has expired (links last 24 hours).',
        'Ask your operator for a new link.',
      ]),
      410,
    )
  const linkUnknown = (reply: FastifyReply) =>
    sendPage(reply, messageView('Page not found', ['This setup link is not valid.']), 404)

  app.get('/setup/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    const { state, username } = await holders.link(link)
    if (state === 'unknown') return linkUnknown(reply)
    if (state === 'gone') return linkGone(reply)
    return sendPage(reply, setupView({ action: `/account/setup/${link}`, username }))
  })

  app.post('/setup/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    const f = form(request)
    try {
      const login = await holders.completeSetup(
        link,
        f.get('password') ?? '',
        f.get('confirm') ?? '',
        actorOf(request, { type: 'anonymous' }),
      )
      // The link replaces a password, not a second factor: a holder who has one gives it next.
      if (await ctx.factors.has(login)) {
        setPendingCookie(reply, await ctx.factors.beginPending(login, '/account'))
        return redirect(reply, '/account/sign-in/verify')
      }
      const accounts = await holders.accountsOf(login)
      const person = { login, accounts: [login, ...accounts.filter((a) => a !== login)] }
      return begin(request, reply, person, '/account')
    } catch (err) {
      if (!(err instanceof HolderError)) throw err
      if (err.reason === 'linkGone') return linkGone(reply)
      if (err.reason === 'linkUnknown') return linkUnknown(reply)
      const view = setupView({
        action: `/account/setup/${link}`,
        username: (await holders.link(link)).username,
        error: { message: err.message },
      })
      return sendPage(reply, view, 422)
    }
  })

  if (!signUp) return
  app.get('/sign-up', signedOut, async (_request, reply) => sendPage(reply, signUpView({})))

  app.post('/sign-up', signedOut, async (request, reply) => {
    const f = form(request)
    const username = (f.get('username') ?? '').trim()
    try {
      const anonymous = actorOf(request, { type: 'anonymous' })
      const account = await holders.signUp(username, f.get('password') ?? '', anonymous)
      return begin(
        request,
        reply,
        { login: account.username, accounts: [account.username] },
        '/account',
      )
    } catch (err) {
      if (!(err instanceof HolderError) && !(err instanceof AccountError)) throw err
      const message = err.message.replace(/^account \S+ already exists$/, 'This username is taken.')
      return sendPage(reply, signUpView({ username, error: { message: capital(message) } }), 422)
    }
  })
}

const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
