import type { FastifyInstance } from 'fastify'
import type { AccountRecord } from '../../accounts/service.js'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import type { TokenView } from '../../tokens/service.js'
import type { DashboardDeps } from '../deps.js'
import { form, formError, holderOf, redirect, sendPage, textOf } from '../reply.js'
import type { CreditFormValues } from '../views/credits.js'
import type { FormError } from '../views/forms.js'
import type { SignedIn } from '../views/layout.js'
import { defaultPeriod, periodOf } from '../views/periods.js'
import { newTokenView, type TokenFormValues } from '../views/token-form.js'
import { tokenPageView } from '../views/token-page.js'
import { deleteView, revealView } from '../views/tokens.js'
import { noticesOf } from './hygiene-data.js'
import {
  askedForm,
  expiresAtField,
  makesTokens,
  newTokenPath,
  readTokenForm,
  tokenFields,
  tokenMakingRefusal,
} from './token-form.js'
import { tokenListPage } from './token-list.js'
import { tokenFormError } from './token-refusals.js'
import { bucketsOf, noSuchPeriod, periodAsked } from './usage-data.js'

const developers = { config: { role: 'developer' as const } }
const creditNotices: Record<string, string> = {
  saved: 'Credits saved',
  removed: 'Credit limit removed',
}

/** The tokens page, creating a token, a token's page and its deletion. */
export function tokenPages(app: FastifyInstance, deps: DashboardDeps) {
  tokenListPage(app, deps)
  createPages(app, deps)
  tokenOwnPages(app, deps)
}

/** Creating a token. */
function createPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { catalog, tokens, accounts } = ctx
  const scopesOf = (a: { plan: string; features: string[] }) =>
    catalog.availableTo(a.plan, a.features)

  // Empty, or filled in as it was left for "Confirm it's you" (as GitHub's new-token page takes
  // its fields from the query): nothing is made until the form is sent.
  app.get('/tokens/new', developers, async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const values = readTokenForm(askedForm(request.url))
    const { effective: policy } = accounts.tokenPolicy(account)
    return sendPage(reply, newTokenView({ signedIn, scopes: scopesOf(account), values, policy }))
  })

  app.post('/tokens/new', developers, async (request, reply) => {
    const { account, signedIn, actor, session } = holderOf(request)
    const values = readTokenForm(form(request))
    const unproven = tokenMakingRefusal(
      session,
      tokens.now(),
      makesTokens(values.scopes),
      newTokenPath(values),
    )
    if (unproven !== undefined) {
      const policy = accounts.tokenPolicy(account).effective
      const view = newTokenView({
        signedIn,
        scopes: scopesOf(account),
        values,
        error: unproven,
        policy,
      })
      return sendPage(reply, view, 403)
    }
    try {
      const fields = tokenFields(values, 'create')
      const token = await tokens.create(account, accounts.holder(account), fields, actor)
      const view = revealView({
        signedIn,
        token: token.token ?? '',
        usage: token.usage,
        id: token.id,
      })
      return sendPage(reply, view)
    } catch (err) {
      const { status, ...error } = tokenFormError(err, 'create', values)
      return sendPage(
        reply,
        newTokenView({
          signedIn,
          scopes: scopesOf(account),
          values,
          error,
          policy: accounts.tokenPolicy(account).effective,
        }),
        status,
      )
    }
  })
}

/** A token's page: its settings form, its verifications over the period, its credits. */
export async function tokenPage(
  ctx: AppContext,
  account: AccountRecord,
  view: {
    signedIn: SignedIn
    values?: TokenFormValues
    error?: FormError
    notice?: string
    creditValues?: CreditFormValues
    creditError?: FormError
  },
  id: string,
  period = periodOf(defaultPeriod, ctx.tokens.now()),
) {
  const { tokens } = ctx
  const token = await tokens.get(account, id)
  const [lastUsed, buckets, credits, notices, family] = await Promise.all([
    ctx.usage.lastUsed([token.id]),
    bucketsOf(ctx, account, period, token.id),
    ctx.credits.get({ account: account.username, tokenId: token.id }),
    noticesOf(ctx, account, token.id),
    familyOf(ctx, account, token),
  ])
  const values = view.values ?? {
    note: token.note,
    scopes: new Set(token.scopes),
    allowedUrls: (token.allowedUrls ?? []).join('\n'),
    allowedIps: (token.allowedIps ?? []).join('\n'),
    expiresAt: expiresAtField(token.expiresAt),
    expiresAtShown: expiresAtField(token.expiresAt),
  }
  const scopes = ctx.catalog.availableTo(account.plan, account.features)
  const leak = (await ctx.leaks.kept(account)).get(token.id)
  const retiresAt = await tokens.retiresAt(token.id)
  const now = tokens.now()
  return tokenPageView({
    ...view,
    values,
    token,
    scopes,
    lastUsed: lastUsed.get(token.id),
    period,
    buckets,
    credits,
    now,
    leak,
    retiresAt,
    notices,
    policy: ctx.accounts.tokenPolicy(account).effective,
    family,
  })
}

/** How many children a token's page lists. */
const childrenShown = 100

/** A token's parent (when it is a child) and the first of its children, in created order. */
async function familyOf(ctx: AppContext, account: AccountRecord, token: TokenView) {
  const query = { limit: childrenShown, sortby: 'created' as const, parent: token.id }
  const page = await ctx.tokens.list(account, query)
  const children = JSON.parse(page.body) as TokenView[]
  const family = { children, more: page.next !== undefined }
  if (token.parent === undefined) return family
  // A parent's deletion ends its children: one gone is only a moment's race, named by its id.
  const parent = await ctx.tokens.get(account, token.parent).catch((err: unknown) => {
    if (err instanceof ApiError && err.kind === 'notFound') return { id: token.parent as string }
    throw err
  })
  return { ...family, parent }
}

/** A token's own page: change and delete it (rolling: token-roll.ts). */
function tokenOwnPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { tokens, accounts } = ctx

  app.get('/tokens/:id', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const q = request.query as { saved?: string; credits?: string; done?: string }
    const notice =
      q.saved === '1'
        ? 'Changes saved'
        : q.done === 'extended'
          ? 'Token extended'
          : textOf(creditNotices, q.credits)
    const { id } = request.params as { id: string }
    const period = periodAsked(request, tokens.now())
    if (period === undefined) return noSuchPeriod(reply, `/account/tokens/${id}`)
    return sendPage(reply, await tokenPage(ctx, account, { signedIn, notice }, id, period))
  })

  app.post('/tokens/:id', developers, async (request, reply) => {
    const { account, signedIn, actor, session } = holderOf(request)
    const { id } = request.params as { id: string }
    const values = readTokenForm(form(request))
    // Giving tokens:write to a token whose string the session may have kept.
    const widens =
      makesTokens(values.scopes) && !makesTokens((await tokens.get(account, id)).scopes)
    const unproven = tokenMakingRefusal(session, tokens.now(), widens, `/account/tokens/${id}`)
    if (unproven !== undefined) {
      const view = await tokenPage(ctx, account, { signedIn, values, error: unproven }, id)
      return sendPage(reply, view, 403)
    }
    try {
      const fields = tokenFields(values, 'update')
      await tokens.update(account, accounts.holder(account), id, fields, actor)
      return redirect(reply, `/account/tokens/${id}?saved=1`)
    } catch (err) {
      const { status, ...error } = tokenFormError(err, 'update', values)
      return sendPage(reply, await tokenPage(ctx, account, { signedIn, values, error }, id), status)
    }
  })

  tokenDeletePages(app, ctx)
}

/** Deleting a token: its confirmation, then the deletion. */
function tokenDeletePages(app: FastifyInstance, ctx: AppContext) {
  const { tokens } = ctx

  app.get('/tokens/:id/delete', developers, async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const token = await tokens.get(account, (request.params as { id: string }).id)
    return sendPage(reply, deleteView({ signedIn, token }))
  })

  app.post('/tokens/:id/delete', developers, async (request, reply) => {
    const { account, signedIn, actor } = holderOf(request)
    const { id } = request.params as { id: string }
    try {
      await tokens.remove(account, id, actor)
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
