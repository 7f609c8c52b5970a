import type { FastifyInstance, FastifyReply } from 'fastify'
import { actorOf } from '../../http/actor.js'
import type { DashboardDeps } from '../deps.js'
import { form, redirect, refusal, refused, sendPage } from '../reply.js'
import { setPendingCookie } from '../session.js'
import { messageView, setupView, signUpView } from '../views/auth.js'
import { beginSession } from './begin.js'

const signedOut = { config: { signedOut: true } }
/** What open sign-up refuses: the password, or the name (taken, resting, malformed). */
const signUpRefusals = [
  'badPassword',
  'passwordMismatch',
  'badUsername',
  'badPlan',
  'accountExists',
  'nameResting',
  'personExists',
] as const

/** Setup links: the holder of a new account (or one who forgot) sets a password. */
export function setupPages(app: FastifyInstance, { ctx }: DashboardDeps) {
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
    const { state, username } = await ctx.holders.link(link)
    if (state === 'unknown') return linkUnknown(reply)
    if (state === 'gone') return linkGone(reply)
    return sendPage(reply, setupView({ action: `/account/setup/${link}`, username }))
  })

  app.post('/setup/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    const f = form(request)
    try {
      const login = await ctx.holders.completeSetup(
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
      const accounts = await ctx.holders.accountsOf(login)
      const person = { login, accounts: [login, ...accounts.filter((a) => a !== login)] }
      return beginSession(ctx, request, reply, person, 'password', '/account')
    } catch (err) {
      const no = refusal(err, ['linkGone', 'linkUnknown', 'badPassword', 'passwordMismatch'])
      if (no.kind === 'linkGone') return linkGone(reply)
      if (no.kind === 'linkUnknown') return linkUnknown(reply)
      const view = setupView({
        action: `/account/setup/${link}`,
        username: (await ctx.holders.link(link)).username,
        error: refused(no),
      })
      return sendPage(reply, view, 422)
    }
  })
}

/** Open sign-up (DASHBOARD_SIGNUP=open): a new account and its holder's first session. */
export function signUpPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  if (!ctx.config.dashboard.signup) return
  app.get('/sign-up', signedOut, async (_request, reply) => sendPage(reply, signUpView({})))

  app.post('/sign-up', signedOut, async (request, reply) => {
    const f = form(request)
    const username = (f.get('username') ?? '').trim()
    try {
      const anonymous = actorOf(request, { type: 'anonymous' })
      const account = await ctx.holders.signUp(username, f.get('password') ?? '', anonymous)
      const person = { login: account.username, accounts: [account.username] }
      return beginSession(ctx, request, reply, person, 'password', '/account')
    } catch (err) {
      const error = refused(refusal(err, signUpRefusals))
      return sendPage(reply, signUpView({ username, error }), 422)
    }
  })
}
