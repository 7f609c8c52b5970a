import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { ApiError, isRefusal, personText } from '../../errors.js'
import { allows } from '../../people/members.js'
import { SingleSignOn } from '../../people/oidc.js'
import { decoyHash } from '../../people/passwords.js'
import { SsoService } from '../../people/sso.js'
import { form, sendPage } from '../reply.js'
import {
  checkCsrf,
  checkOrigin,
  clearSessionCookie,
  confirmPath,
  Forbidden,
  heldByPolicy,
  recentlyProven,
  safeNext,
  sessionId,
  signInPath,
} from '../session.js'
import { SignInThrottle } from '../throttle.js'
import { assets } from '../views/assets.js'
import { messageView } from '../views/auth.js'
import { accountPages } from './account.js'
import { activityPages } from './activity.js'
import { confirmPages } from './confirm.js'
import { factorPages } from './factors.js'
import { hygienePages } from './hygiene.js'
import { memberPages } from './members.js'
import { passkeyPages } from './passkeys.js'
import { portalPages } from './portal.js'
import { requestsPages } from './requests.js'
import { signInPages } from './sign-in.js'
import { ssoPages } from './sso.js'
import { temporaryPages } from './temporary.js'
import { tokenRollPages } from './token-roll.js'
import { tokenPages } from './tokens.js'
import { trustPolicyPages } from './trust-policies.js'
import { usagePages } from './usage.js'

const securityHeaders = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
}

/** Forms of every page, including the allowed URLs of a token (100 of 2,048 characters). */
const formLimit = 512 * 1024

/**
 * The account dashboard under /account (DASHBOARD.md). Its parsers, hooks and error pages are
 * registered in this plugin only: the API's routes pay for none of them.
 */
export async function dashboard(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const throttle = new SignInThrottle(
    ctx.config.redis,
    ctx.log,
    ctx.tokens.now,
    ctx.primaryAttempts,
  )
  // Ready before the first sign-in of an unknown username, which must take no longer than others.
  void decoyHash()
  app.addHook('onClose', () => throttle.close())
  app.decorateRequest('holder', null)

  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: formLimit },
    (_request, body, done) => done(null, new URLSearchParams(body as string)),
  )

  app.addHook('onRequest', async (request) => {
    if (request.method === 'POST') checkOrigin(request, app.publicUrl)
  })
  app.addHook('preHandler', admit(ctx))
  app.addHook('onSend', async (_request, reply, payload) => {
    // A page may ask for a stricter referrer policy (portal links: no-referrer).
    const referrer = reply.getHeader('referrer-policy')
    reply.headers(securityHeaders)
    if (referrer === 'no-referrer') reply.header('referrer-policy', referrer)
    // The API's CORS headers are for token clients; pages are for this origin only.
    reply.removeHeader('access-control-allow-origin')
    reply.removeHeader('access-control-expose-headers')
    return payload
  })

  app.setErrorHandler(errorPage(ctx))
  app.setNotFoundHandler((_request, reply) =>
    sendPage(
      reply,
      messageView('Page not found', ['There is no page at this address.'], back),
      404,
    ),
  )

  app.get('/assets/:name', { config: { signedOut: true } }, async (request, reply) => {
    const asset = assets.get((request.params as { name: string }).name)
    if (asset === undefined) return reply.callNotFound()
    return reply
      .header('cache-control', 'public, max-age=31536000, immutable')
      .type(asset.type)
      .send(asset.body)
  })

  const sso = new SingleSignOn(ctx.config.dashboard.oidc, ctx.log)
  // Discovery begins now; the sign-in page waits a moment for it if it is still under way.
  void sso.ready(0)
  const people = { db: ctx.db, accounts: ctx.accounts, now: ctx.tokens.now }
  const ssoFlows = new SsoService(sso, people, ctx.config.dashboard.signup)
  const deps = { ctx, throttle, sso, ssoFlows }
  signInPages(app, deps)
  tokenPages(app, deps)
  tokenRollPages(app, deps)
  usagePages(app, deps)
  requestsPages(app, deps)
  temporaryPages(app, deps)
  accountPages(app, deps)
  trustPolicyPages(app, deps)
  hygienePages(app, deps)
  activityPages(app, deps)
  memberPages(app, deps)
  portalPages(app, deps)
  ssoPages(app, deps)
  factorPages(app, deps)
  passkeyPages(app, deps)
  confirmPages(app, deps)
}

const confirmFirst = "Confirm it's you first: sign-in methods change only with a recent proof."

const back = { href: '/account', text: 'Back to your tokens' }

const titles: Record<number, string> = {
  400: 'Bad request',
  403: 'Request refused',
  404: 'Page not found',
  410: 'Link no longer valid',
  413: 'Too much data',
  415: 'Unsupported form',
  429: 'Too many attempts',
  503: 'Service unavailable',
}
const titleOf = (status: number) =>
  titles[status] ?? (status >= 500 ? 'Something went wrong' : 'Request refused')

/**
 * Every page but the signed-out ones: the session, its account and role, the CSRF token, a
 * 2FA policy and a recent proof, before the handler runs.
 */
const admit = (ctx: AppContext) =>
  async function admitHolder(request: FastifyRequest, reply: FastifyReply) {
    // An unknown page is a 404 for everyone; nothing is learnt by signing in first.
    if (request.routeOptions.config.signedOut || request.is404) return
    const id = sessionId(request)
    const session = id === undefined ? undefined : await ctx.holders.session(id)
    const account = session && (await ctx.accounts.find(session.username))
    // Read at every request: a member removed or given another role is out at once, everywhere.
    const memberships = session && (await ctx.members.memberships(session.login))
    const role = memberships?.find((m) => m.username === account?.username)?.role
    if (session === undefined || account === undefined || account.disabled || role === undefined) {
      if (session !== undefined) await ctx.holders.endSession(session)
      if (id !== undefined) clearSessionCookie(reply)
      const wanted = request.method === 'GET' ? safeNext(request.url) : '/account'
      return reply.code(303).redirect(signInPath(wanted), 303)
    }
    if (request.method === 'POST') checkCsrf(form(request), session)
    const needed = request.routeOptions.config.role
    if (needed !== undefined && !allows(role, needed)) {
      throw new Forbidden(
        `Your role in ${account.username} is ${role}: this needs ${needed === 'owner' ? 'an owner' : 'a developer or an owner'}.`,
      )
    }
    // A policy requires a second factor and this session came in without one (a password, or
    // a link made for another account) from a person who has none: only enrolment.
    if (
      heldByPolicy(session, account.username) &&
      request.routeOptions.config.enrolment !== true &&
      request.routeOptions.url !== '/account/sign-out' &&
      (await ctx.factors.required(account.username)) &&
      !(await ctx.factors.has(session.login))
    ) {
      if (request.method === 'GET') return reply.code(303).redirect('/account/settings/totp', 303)
      throw new Forbidden(
        `${account.username} requires a second factor at sign-in: set one up first.`,
      )
    }
    const switchable = (memberships?.length ?? 0) > 1
    request.holder = { session, account, role, switchable }
    // Whatever keeps the account after the cookie is gone: a recent proof first (a stolen
    // session is not one). Tokens that can make tokens are asked for by their pages.
    const { sudo, back: formPage } = request.routeOptions.config
    if (sudo !== undefined && !recentlyProven(session, ctx.tokens.now())) {
      const next =
        request.method === 'GET' ? safeNext(request.url) : (formPage ?? '/account/settings')
      const confirm = confirmPath(next)
      if (sudo === 'json') return reply.code(403).send({ message: confirmFirst, confirm })
      return reply.code(303).redirect(confirm, 303)
    }
  }

/** A refusal or a failure as a page: what the error table tells a person, or that it was us. */
const errorPage = (ctx: AppContext) =>
  function dashboardError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    if (error instanceof Forbidden) {
      return sendPage(reply, messageView('Request refused', [error.message]), 403)
    }
    // A refusal is told by the page that expects it: one that reaches here went uncaught.
    const uncaught = error instanceof ApiError && isRefusal(error)
    if (error instanceof ApiError && error.statusCode < 500 && !uncaught) {
      const lines = [personText(error, 'page')]
      return sendPage(reply, messageView(titleOf(error.statusCode), lines, back), error.statusCode)
    }
    const status = uncaught ? 500 : (error.statusCode ?? 500)
    if (status >= 400 && status < 500) {
      return sendPage(reply, messageView(titleOf(status), [error.message], back), status)
    }
    if (!(error instanceof ApiError) || uncaught)
      ctx.log.error({ err: error, url: request.routeOptions.url }, 'dashboard error')
    const unavailable = error instanceof ApiError && error.statusCode === 503
    return sendPage(
      reply,
      messageView(titleOf(unavailable ? 503 : 500), [
        'Something went wrong on our side. Try again in a moment.',
      ]),
      unavailable ? 503 : 500,
    )
  }
