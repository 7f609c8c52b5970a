import { isIP } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { type HttpConfig, passkeyOrigin } from '../../config/http.js'
import { actorOf } from '../../http/actor.js'
import type { RelyingParty } from '../../people/passkeys.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, sendPage, tooManyAttempts } from '../reply.js'
import { pendingId, safeNext } from '../session.js'
import type { ThrottleKey } from '../throttle.js'
import { messageView, type PasskeyPlace } from '../views/auth.js'
import { beginSession } from './begin.js'

const tooMany = 'Too many passkey sign-ins from this address: try again later.'
const signedOut = { config: { signedOut: true } }
/** Registration: open to a person held on enrolment, and only with a recent proof. */
const registration = (sudo: 'page' | 'json') => ({ config: { enrolment: true, sudo } })

/** The relying party of PUBLIC_URL: its origin, and its host name as the id. */
export const relyingParty = (publicUrl: string): RelyingParty => {
  const url = new URL(publicUrl)
  return { origin: url.origin, id: url.hostname }
}

const originOf = (host: string) => {
  try {
    return new URL(`https://${host}`).origin
  } catch {
    return undefined
  }
}

/**
 * Whether the page this request asks for may offer passkeys: a browser performs a ceremony only
 * at the relying party's own origin, and never at an IP address. Behind a TLS proxy the request
 * names the proxy's upstream, not what the browser shows: PUBLIC_URL is the origin there.
 */
export function passkeyPlace(request: FastifyRequest, http: HttpConfig): PasskeyPlace {
  const rp = relyingParty(passkeyOrigin(http, request.server.publicUrl))
  if (isIP(rp.id.replace(/^\[|\]$/g, '')) !== 0) return { offered: false }
  if (http.trustProxy || originOf(request.host) === rp.origin) return { offered: true }
  return { offered: false, at: rp.origin }
}

/**
 * Passkey ceremonies: options as JSON for the page's script, then a form POST with the
 * browser's answer. Registration needs a session (and its CSRF token); sign-in with a passkey
 * alone comes before one, checked by origin like the sign-in form.
 */
export function passkeyPages(app: FastifyInstance, { ctx, throttle }: DashboardDeps) {
  const { passkeys, holders } = ctx
  const rp = () => relyingParty(passkeyOrigin(ctx.config.http, app.publicUrl))

  app.post('/passkeys/register/options', registration('json'), async (request, reply) => {
    const { session } = holderOf(request)
    return reply.send(await passkeys.registrationOptions(rp(), session.login))
  })

  app.post('/passkeys/register', registration('page'), async (request, reply) => {
    const { session, account, actor } = holderOf(request)
    const f = form(request)
    const made = await passkeys.register(
      rp(),
      session.login,
      f.get('name') ?? '',
      f.get('response') ?? '',
      actor,
      account.username,
    )
    return redirect(
      reply,
      made ? '/account/settings?done=passkey' : '/account/settings?refused=passkey',
    )
  })

  // Each anonymous challenge is a row for 5 minutes: an address may ask for so many.
  app.post('/passkeys/signin/options', signedOut, async (request, reply) => {
    const wait = await throttle.reserve([{ kind: 'challenge', value: request.ip }])
    if (wait > 0) {
      return reply.code(429).header('retry-after', String(wait)).send({ message: tooMany })
    }
    return reply.send(await passkeys.signInOptions(rp()))
  })

  app.post('/passkeys/second/options', signedOut, async (request, reply) => {
    const id = pendingId(request)
    const pending = id === undefined ? undefined : await ctx.factors.pending(id)
    if (pending === undefined) return reply.code(410).send({ message: 'sign-in expired' })
    return reply.send(await passkeys.secondOptions(rp(), pending.login))
  })

  app.post('/passkeys/signin', signedOut, async (request, reply) => {
    const keys: ThrottleKey[] = [{ kind: 'ip', value: request.ip }]
    const wait = await throttle.reserve(keys)
    if (wait > 0) return tooManyAttempts(reply, wait)
    const f = form(request)
    const login = await passkeys.authenticate(rp(), f.get('response') ?? '', 'signin')
    const anonymous = actorOf(request, { type: 'anonymous' })
    const accounts = login === undefined ? [] : await holders.accountsOf(login)
    if (login === undefined || accounts.length === 0) {
      await holders.recordPasskeyFailure(anonymous)
      const lines = ['That passkey was not accepted.', 'Sign in with your password, or try again.']
      const back = { href: '/account/sign-in', text: 'Back to sign in' }
      return sendPage(reply, messageView('Sign-in refused', lines, back), 401)
    }
    await throttle.release(keys)
    const home = accounts.includes(login) ? login : (accounts[0] as string)
    const person = { login, accounts: [home, ...accounts.filter((a) => a !== home)] }
    await holders.recordPasskeySignIn(login, home, anonymous)
    return beginSession(ctx, request, reply, person, 'passkey', safeNext(f.get('next')))
  })
}
