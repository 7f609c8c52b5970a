import type { FastifyInstance } from 'fastify'
import type { Session } from '../../people/sessions.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, refusal, refused, sendPage, textOf } from '../reply.js'
import { scopesView, settingsView } from '../views/account.js'

const notices: Record<string, string> = {
  password: 'Password changed',
  totp: 'Authenticator app turned on',
  passkey: 'Passkey added',
  'factor-removed': 'Removed',
}
const refusals: Record<string, string> = {
  last: 'Your account requires a second factor: add another before you remove this one.',
  missing: 'There is no such sign-in method.',
  passkey: 'The passkey was not added: the browser’s answer did not check out. Try again.',
}

/** The scopes page and settings (plan, features, password). */
export function accountPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const scopesOf = (a: { plan: string; features: string[] }) =>
    ctx.catalog.availableTo(a.plan, a.features)

  app.get('/scopes', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    return sendPage(reply, scopesView({ signedIn, scopes: scopesOf(account) }))
  })

  const personOf = async (session: Session) => {
    const row = await ctx.members.person(session.login)
    const person = { hasPassword: row?.password != null, method: session.method }
    return row?.email == null ? person : { ...person, email: row.email }
  }

  const factorsOf = async (session: Session, username: string, error?: { message: string }) => {
    const [factors, codesLeft, required] = await Promise.all([
      ctx.factors.list(session.login),
      ctx.factors.recoveryCodesLeft(session.login),
      ctx.factors.required(username),
    ])
    return { factors, codesLeft, required, ...(error === undefined ? {} : { error }) }
  }

  app.get('/settings', async (request, reply) => {
    const { account, signedIn, session } = holderOf(request)
    const q = request.query as { done?: string; refused?: string }
    const notice = textOf(notices, q.done)
    const refusal = textOf(refusals, q.refused)
    const scopeCount = scopesOf(account).length
    const person = await personOf(session)
    const factors = await factorsOf(
      session,
      account.username,
      refusal === undefined ? undefined : { message: refusal },
    )
    const view = settingsView({ signedIn, account, scopeCount, person, factors, notice })
    return sendPage(reply, view)
  })

  app.post('/settings/password', async (request, reply) => {
    const { account, session, signedIn, actor } = holderOf(request)
    const f = form(request)
    try {
      const [current, next] = [f.get('current') ?? '', f.get('password') ?? '']
      await ctx.holders.changePassword(session, current, next, actor)
      return redirect(reply, '/account/settings?done=password')
    } catch (err) {
      const error = refused(refusal(err, ['wrongPassword', 'badPassword', 'passwordMismatch']))
      const scopeCount = scopesOf(account).length
      const person = await personOf(session)
      const factors = await factorsOf(session, account.username)
      const view = settingsView({ signedIn, account, scopeCount, person, factors, error })
      return sendPage(reply, view, 422)
    }
  })
}
