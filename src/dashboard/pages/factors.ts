import type { FastifyInstance } from 'fastify'
import { passkeyOrigin } from '../../config/http.js'
import { actorOf } from '../../http/actor.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, refusal, refused, sendPage, tooManyAttempts } from '../reply.js'
import { clearPendingCookie, heldByPolicy, pendingId } from '../session.js'
import type { ThrottleKey } from '../throttle.js'
import { messageView } from '../views/auth.js'
import { recoveryCodesView, totpView, verifyView } from '../views/factors.js'
import { beginSession } from './begin.js'
import { passkeyPlace, relyingParty } from './passkeys.js'

const signedOut = { config: { signedOut: true } }
/** Pages a person held by a 2FA policy may still use: enrolment, and signing out. */
const enrolment = { config: { enrolment: true } }
/** Changes a sign-in method: a recent proof first (see pages/confirm.ts). */
const changesMethod = { config: { sudo: 'page' as const } }
const enrolling = { config: { enrolment: true, sudo: 'page' as const } }
/** The account's two-step policy: who may sign in how, so a recent proof first too. */
const ownersProven = {
  config: { role: 'owner' as const, sudo: 'page' as const, back: '/account/members' },
}

/**
 * Two-step sign-in: the second step after a right password, one's authenticator app and
 * recovery codes, removing a factor, and an account's policy.
 */
export function factorPages(app: FastifyInstance, deps: DashboardDeps) {
  secondStepPages(app, deps)
  factorSettingsPages(app, deps)
}

/** The second step of a sign-in, after a right password: a code or a passkey. */
function secondStepPages(app: FastifyInstance, { ctx, throttle }: DashboardDeps) {
  const { factors, holders, passkeys } = ctx
  const rp = () => relyingParty(passkeyOrigin(ctx.config.http, app.publicUrl))
  const hasPasskey = async (login: string) =>
    (await factors.list(login)).some((f) => f.kind === 'passkey')

  const expired = () =>
    messageView('Sign-in expired', ['Too much time has passed since your password.'], {
      href: '/account/sign-in',
      text: 'Sign in again',
    })

  app.get('/sign-in/verify', signedOut, async (request, reply) => {
    const id = pendingId(request)
    const pending = id === undefined ? undefined : await factors.pending(id)
    if (pending === undefined) return sendPage(clearPendingCookie(reply), expired(), 410)
    const place = passkeyPlace(request, ctx.config.http)
    return sendPage(reply, verifyView({ passkeys: await hasPasskey(pending.login), place }))
  })

  app.post('/sign-in/verify', signedOut, async (request, reply) => {
    const id = pendingId(request)
    const pending = id === undefined ? undefined : await factors.pending(id)
    if (id === undefined || pending === undefined) {
      return sendPage(clearPendingCookie(reply), expired(), 410)
    }
    // Second-factor failures share the sign-in throttle.
    const keys: ThrottleKey[] = [
      { kind: 'user', value: pending.login },
      { kind: 'ip', value: request.ip },
    ]
    const wait = await throttle.reserve(keys)
    if (wait > 0) return tooManyAttempts(reply, wait)
    const anonymous = actorOf(request, { type: 'anonymous' })
    const accounts = await holders.accountsOf(pending.login)
    const home = accounts.includes(pending.login) ? pending.login : (accounts[0] ?? pending.login)
    const actor = { ...anonymous, login: pending.login, method: 'password' as const }
    const f = form(request)
    const assertion = f.get('passkey')
    const how =
      assertion === null
        ? await factors.check(pending.login, f.get('code') ?? '', actor, home)
        : (await passkeys.authenticate(rp(), assertion, 'second', pending.login)) === undefined
          ? undefined
          : ('passkey' as const)
    await holders.recordSecondStep(pending.login, anonymous, how)
    if (how === undefined) {
      const error = {
        message: assertion === null ? 'That code is not right' : 'That passkey was not accepted',
      }
      const place = passkeyPlace(request, ctx.config.http)
      const view = verifyView({ passkeys: await hasPasskey(pending.login), place, error })
      return sendPage(reply, view, 401)
    }
    await throttle.release(keys)
    if (!(await factors.finishPending(id)) || accounts.length === 0) {
      return sendPage(clearPendingCookie(reply), expired(), 410)
    }
    await throttle.clear({ kind: 'user', value: pending.login })
    clearPendingCookie(reply)
    const person = { login: pending.login, accounts: [home, ...accounts.filter((a) => a !== home)] }
    return beginSession(ctx, request, reply, person, 'password', pending.next)
  })
}

/** One's authenticator app, recovery codes and factors; an account's policy. */
function factorSettingsPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { factors } = ctx
  const held = async (request: Parameters<typeof holderOf>[0]) => {
    const { session, account } = holderOf(request)
    return heldByPolicy(session, account.username) && (await factors.required(account.username))
  }

  app.get('/settings/totp', enrolling, async (request, reply) => {
    const { signedIn, session } = holderOf(request)
    const started = await factors.startTotp(session.login)
    const view = totpView({ signedIn, ...started, held: await held(request) })
    return sendPage(reply, view)
  })

  app.post('/settings/totp', enrolling, async (request, reply) => {
    const { signedIn, session, account, actor } = holderOf(request)
    const code = form(request).get('code') ?? ''
    try {
      const codes = await factors.confirmTotp(session.login, code, actor, account.username)
      if (codes === undefined) return redirect(reply, '/account/settings?done=totp')
      return sendPage(reply, recoveryCodesView({ signedIn, codes }))
    } catch (err) {
      const error = refused(refusal(err, ['totpRefused']))
      const again = await factors.pendingTotp(session.login)
      if (again === undefined) return redirect(reply, '/account/settings/totp')
      const view = totpView({ signedIn, ...again, held: await held(request), error })
      return sendPage(reply, view, 422)
    }
  })

  app.post('/settings/recovery-codes', changesMethod, async (request, reply) => {
    const { signedIn, session, account, actor } = holderOf(request)
    if (!(await factors.has(session.login))) return redirect(reply, '/account/settings')
    const codes = await factors.newRecoveryCodes(session.login, actor, account.username)
    return sendPage(reply, recoveryCodesView({ signedIn, codes }))
  })

  // The codes the page showed, back as a file: only unused codes of this person are echoed.
  app.post('/settings/recovery-codes.txt', enrolment, async (request, reply) => {
    const { session } = holderOf(request)
    const codes = form(request).getAll('code').slice(0, 10)
    if (!(await factors.areCodesOf(session.login, codes))) {
      return sendPage(
        reply,
        messageView('Codes no longer valid', ['These recovery codes have been replaced.']),
        410,
      )
    }
    return reply
      .header('cache-control', 'no-store')
      .header('content-disposition', 'attachment; filename="tessera-recovery-codes.txt"')
      .type('text/plain; charset=utf-8')
      .send(`Tessera recovery codes for ${session.login}\n\n${codes.join('\n')}\n`)
  })

  app.post('/settings/factors/:id/remove', changesMethod, async (request, reply) => {
    const { session, account, actor } = holderOf(request)
    const { id } = request.params as { id: string }
    try {
      const required = await factors.required(account.username)
      await factors.remove(session.login, id, actor, account.username, required)
      return redirect(reply, '/account/settings?done=factor-removed')
    } catch (err) {
      const no = refusal(err, ['lastFactor', 'noSuchFactor'])
      return redirect(
        reply,
        `/account/settings?refused=${no.kind === 'lastFactor' ? 'last' : 'missing'}`,
      )
    }
  })

  app.post('/members/policy', ownersProven, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const require = form(request).get('require2fa') === 'on'
    await factors.setPolicy(account.username, require, actor)
    return redirect(reply, '/account/members?done=policy')
  })
}
