import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { actorOf } from '../../http/actor.js'
import { type SsoRefusal, ssoFlowLifetimeMs } from '../../people/sso.js'
import type { DashboardDeps } from '../deps.js'
import { sendPage } from '../reply.js'
import { cookieOf, safeNext } from '../session.js'
import { messageView } from '../views/auth.js'
import { beginSession } from './begin.js'

const signedOut = { config: { signedOut: true } }
/** The browser's half of a sign-in flow: only this browser can finish what it began. */
const flowCookie = '__Host-tessera_sso'

const flowId = (request: FastifyRequest) => cookieOf(request, flowCookie)

const setFlowCookie = (reply: FastifyReply, value: string, maxAge: number) =>
  reply.header(
    'set-cookie',
    `${flowCookie}=${value}; Path=/; Max-Age=${maxAge}; Secure; HttpOnly; SameSite=Lax`,
  )

const inviteYou = 'Ask an owner of your account to invite you, then sign in again.'

/** What the refusal page says, and its status. */
function refusalPage(refusal: SsoRefusal): { lines: string[]; status: number } {
  switch (refusal.reason) {
    case 'expired':
      return {
        lines: ['This sign-in has expired or was already used. Start again from the sign-in page.'],
        status: 400,
      }
    case 'provider':
      return { lines: [refusal.message], status: 400 }
    case 'unverified':
      return {
        lines: [
          'Your provider has not verified your email address, so it cannot be matched to an invitation.',
          'Verify it with your provider, or ask an owner of your account for a portal link.',
        ],
        status: 403,
      }
    case 'unproven':
      return {
        lines: [
          `Nobody here has proven the email address ${refusal.email}.`,
          'If you joined with a username and password, sign in with them: an email that came with an invitation is never matched to a provider.',
        ],
        status: 403,
      }
    case 'unknown':
      return {
        lines: [`Nobody here has the email address ${refusal.email ?? '(none given)'}.`, inviteYou],
        status: 403,
      }
    case 'noAccount':
      return { lines: ['You are not a member of any account.', inviteYou], status: 403 }
  }
}

/**
 * Single sign-on: /account/sso sends the browser to the provider, /account/sso/callback takes
 * it back. A person is signed in only when the provider's answer checks out and they belong to
 * an account; every refusal is a page that says why, and no session.
 */
export function ssoPages(app: FastifyInstance, { ctx, ssoFlows }: DashboardDeps) {
  if (!ssoFlows.configured) return
  const origin = () => ctx.config.http.publicUrl ?? app.publicUrl
  const callbackUrl = () => `${origin()}/account/sso/callback`
  const again = { href: '/account/sign-in', text: 'Back to sign in' }

  app.get('/sso', signedOut, async (request, reply) => {
    const next = safeNext((request.query as { next?: string }).next)
    const started = await ssoFlows.start(callbackUrl(), next)
    if (started === undefined) {
      const lines = ['Single sign-on is not available right now. Try again in a moment.']
      return sendPage(reply, messageView('Service unavailable', lines, again), 503)
    }
    setFlowCookie(reply, started.flowId, ssoFlowLifetimeMs / 1000)
    return reply.code(303).redirect(started.url.href, 303)
  })

  app.get('/sso/callback', signedOut, async (request, reply) => {
    const at = request.url.indexOf('?')
    const url = new URL(`${callbackUrl()}${at === -1 ? '' : request.url.slice(at)}`)
    const anonymous = actorOf(request, { type: 'anonymous' })
    const outcome = await ssoFlows.finish(flowId(request), url, anonymous)
    setFlowCookie(reply, '', 0)
    if ('refused' in outcome) {
      const { lines, status } = refusalPage(outcome.refused)
      return sendPage(reply, messageView('Sign-in refused', lines, again), status)
    }
    return beginSession(ctx, request, reply, outcome.person, 'sso', outcome.next)
  })
}
