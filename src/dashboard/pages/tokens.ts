import type { FastifyInstance } from 'fastify'
import type { DashboardDeps } from '../deps.js'
import { form, formError, holderOf, redirect, sendPage } from '../reply.js'
import { deleteView, newTokenView, revealView, tokenPageView, tokensView } from '../views/tokens.js'
import { readTokenForm, tokenFields } from './token-form.js'

/** The tokens page, creating a token, a token's page and its deletion. */
export function tokenPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { tokens, accounts, catalog } = ctx
  const scopesOf = (a: { plan: string; features: string[] }) =>
    catalog.availableTo(a.plan, a.features)

  app.get('/', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const q = request.query as { start?: string; before?: string; done?: string }
    const page = await tokens.browse(account, { start: q.start, before: q.before })
    if (q.start === undefined && q.before === undefined) {
      // Created with the account, the default token is first anyway, unless clocks disagreed.
      const at = page.tokens.findIndex((t) => t.default)
      if (at > 0) page.tokens.unshift(...page.tokens.splice(at, 1))
    }
    const notice = q.done === 'deleted' ? 'Token deleted.' : undefined
    return sendPage(reply, tokensView({ signedIn, ...page, notice }))
  })

  app.get('/tokens/new', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const values = { note: '', scopes: new Set<string>(), allowedUrls: '' }
    return sendPage(reply, newTokenView({ signedIn, scopes: scopesOf(account), values }))
  })

  app.post('/tokens/new', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const values = readTokenForm(form(request))
    try {
      const fields = tokenFields(values, 'create')
      const token = await tokens.create(account, accounts.holder(account), fields)
      const view = revealView({
        signedIn,
        token: token.token ?? '',
        usage: token.usage,
        id: token.id,
      })
      return sendPage(reply, view)
    } catch (err) {
      const { status, ...error } = formError(err)
      return sendPage(
        reply,
        newTokenView({ signedIn, scopes: scopesOf(account), values, error }),
        status,
      )
    }
  })

  app.get('/tokens/:id', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const token = await tokens.get(account, (request.params as { id: string }).id)
    const values = {
      note: token.note,
      scopes: new Set(token.scopes),
      allowedUrls: (token.allowedUrls ?? []).join('\n'),
    }
    const notice = (request.query as { saved?: string }).saved === '1' ? 'Changes saved' : undefined
    return sendPage(
      reply,
      tokenPageView({ signedIn, token, scopes: scopesOf(account), values, notice }),
    )
  })

  app.post('/tokens/:id', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const { id } = request.params as { id: string }
    const values = readTokenForm(form(request))
    try {
      await tokens.update(account, accounts.holder(account), id, tokenFields(values, 'update'))
      return redirect(reply, `/account/tokens/${id}?saved=1`)
    } catch (err) {
      const { status, ...error } = formError(err)
      const token = await tokens.get(account, id)
      const view = tokenPageView({ signedIn, token, scopes: scopesOf(account), values, error })
      return sendPage(reply, view, status)
    }
  })

  app.get('/tokens/:id/delete', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const token = await tokens.get(account, (request.params as { id: string }).id)
    return sendPage(reply, deleteView({ signedIn, token }))
  })

  app.post('/tokens/:id/delete', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const { id } = request.params as { id: string }
    try {
      await tokens.remove(account, id)
      return redirect(reply, '/account?done=deleted')
    } catch (err) {
      const { status, ...error } = formError(err)
      return sendPage(
        reply,
        deleteView({ signedIn, token: await tokens.get(account, id), error }),
        status,
      )
    }
  })
}
