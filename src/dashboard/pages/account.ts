import type { FastifyInstance } from 'fastify'
import { HolderError, type Session } from '../../accounts/holders.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, sendPage } from '../reply.js'
import { scopesView, settingsView } from '../views/account.js'

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

  app.get('/settings', async (request, reply) => {
    const { account, signedIn, session } = holderOf(request)
    const notice =
      (request.query as { done?: string }).done === 'password' ? 'Password changed' : undefined
    const scopeCount = scopesOf(account).length
    const person = await personOf(session)
    return sendPage(reply, settingsView({ signedIn, account, scopeCount, person, notice }))
  })

  app.post('/settings/password', async (request, reply) => {
    const { account, session, signedIn, actor } = holderOf(request)
    const f = form(request)
    try {
      const [current, next] = [f.get('current') ?? '', f.get('password') ?? '']
      await ctx.holders.changePassword(session, current, next, actor)
      return redirect(reply, '/account/settings?done=password')
    } catch (err) {
      if (!(err instanceof HolderError)) throw err
      const scopeCount = scopesOf(account).length
      const error = { message: err.message }
      const person = await personOf(session)
      return sendPage(reply, settingsView({ signedIn, account, scopeCount, person, error }), 422)
    }
  })
}
