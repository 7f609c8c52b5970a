import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { peopleRepo } from '../../db/people.js'
import { actorOf } from '../../http/actor.js'
import { SsoRefused } from '../../people/oidc.js'
import { digest, secret } from '../../people/secrets.js'
import { isoTime } from '../../time.js'
import type { DashboardDeps } from '../deps.js'
import { sendPage } from '../reply.js'
import { cookieOf, safeNext } from '../session.js'
import { messageView } from '../views/auth.js'
import { beginSession } from './begin.js'

const signedOut = { config: { signedOut: true } }
/** The browser's half of a sign-in flow: only this browser can finish what it began. */
const flowCookie = '__Host-tessera_sso'
const flowLifetimeMs = 10 * 60_000

const flowId = (request: FastifyRequest) => cookieOf(request, flowCookie)

const setFlowCookie = (reply: FastifyReply, value: string, maxAge: number) =>
  reply.header(
    'set-cookie',
    `${flowCookie}=${value}; Path=/; Max-Age=${maxAge}; Secure; HttpOnly; SameSite=Lax`,
  )

/**
 * Single sign-on: /account/sso sends the browser to the provider, /account/sso/callback takes
 * it back. A person is signed in only when the provider's answer checks out and they belong to
 * an account; every refusal is a page that says why, and no session.
 */
export function ssoPages(app: FastifyInstance, { ctx, sso }: DashboardDeps) {
  if (!sso.configured) return
  const origin = () => ctx.config.http.publicUrl ?? app.publicUrl
  const callbackUrl = () => `${origin()}/account/sso/callback`
  const again = { href: '/account/sign-in', text: 'Back to sign in' }
  const refuse = (reply: FastifyReply, lines: string[], status = 403) => {
    setFlowCookie(reply, '', 0)
    return sendPage(reply, messageView('Sign-in refused', lines, again), status)
  }

  app.get('/sso', signedOut, async (request, reply) => {
    const next = safeNext((request.query as { next?: string }).next)
    await sso.ready()
    const started = await sso.start(callbackUrl())
    if (started === undefined) {
      const lines = ['Single sign-on is not available right now. Try again in a moment.']
      return sendPage(reply, messageView('Service unavailable', lines, again), 503)
    }
    const id = secret()
    const now = ctx.tokens.now()
    await peopleRepo.addFlow(ctx.db, {
      id_hash: digest(id),
      ...started.checks,
      next,
      expires: isoTime(now + flowLifetimeMs),
    })
    setFlowCookie(reply, id, flowLifetimeMs / 1000)
    return reply.code(303).redirect(started.url.href, 303)
  })

  app.get('/sso/callback', signedOut, async (request, reply) => {
    const id = flowId(request)
    const flow =
      id === undefined
        ? undefined
        : await peopleRepo.takeFlow(ctx.db, digest(id), isoTime(ctx.tokens.now()))
    if (flow === undefined) {
      return refuse(
        reply,
        ['This sign-in has expired or was already used. Start again from the sign-in page.'],
        400,
      )
    }
    const at = request.url.indexOf('?')
    const url = new URL(`${callbackUrl()}${at === -1 ? '' : request.url.slice(at)}`)
    let identity: Awaited<ReturnType<typeof sso.finish>>
    try {
      identity = await sso.finish(url, flow)
    } catch (err) {
      if (err instanceof SsoRefused) return refuse(reply, [err.message], 400)
      throw err
    }
    const anonymous = actorOf(request, { type: 'anonymous' })
    let person = await ctx.members.ssoPerson(identity, anonymous)
    if (person === undefined && !identity.emailVerified) {
      return refuse(reply, [
        'Your provider has not verified your email address, so it cannot be matched to an invitation.',
        'Verify it with your provider, or ask an owner of your account for a portal link.',
      ])
    }
    if (person === undefined && ctx.config.dashboard.signup) {
      person = await ctx.members.ssoSignUp(identity, anonymous)
    }
    if (person === undefined && (await ctx.members.unproven(identity.email))) {
      return refuse(reply, [
        `Nobody here has proven the email address ${identity.email}.`,
        'If you joined with a username and password, sign in with them: an email that came with an invitation is never matched to a provider.',
      ])
    }
    if (person === undefined) {
      return refuse(reply, [
        `Nobody here has the email address ${identity.email ?? '(none given)'}.`,
        'Ask an owner of your account to invite you, then sign in again.',
      ])
    }
    const accounts = await ctx.holders.accountsOf(person.login)
    if (accounts.length === 0) {
      return refuse(reply, [
        'You are not a member of any account.',
        'Ask an owner of your account to invite you, then sign in again.',
      ])
    }
    setFlowCookie(reply, '', 0)
    await ctx.members.recordSsoSignIn(person.login, accounts[0] as string, anonymous)
    const to = flow.next
    return beginSession(ctx, request, reply, { login: person.login, accounts }, 'sso', to)
  })
}
