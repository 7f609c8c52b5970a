import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import type { DashboardDeps } from '../deps.js'
import { form, formError, holderOf, redirect, sendPage } from '../reply.js'
import type { FormError } from '../views/forms.js'
import { csvName, type Period, usageCsv } from '../views/periods.js'
import { usagePageView } from '../views/usage-page.js'
import { tokenPage } from './tokens.js'
import {
  bucketsOf,
  type CreditChange,
  creditForm,
  isFormError,
  latencyOf,
  noSuchPeriod,
  periodAsked,
  readCredits,
  topTokensOf,
} from './usage-data.js'

const owners = { config: { role: 'owner' as const } }

/**
 * The Usage page. The account's credits are the operator's quota (often its plan's, used for
 * billing): every member sees them, read-only; no dashboard route changes them.
 */
async function usagePage(ctx: AppContext, request: FastifyRequest, period: Period) {
  const { account, signedIn } = holderOf(request)
  const [buckets, top, credits, latency] = await Promise.all([
    bucketsOf(ctx, account, period),
    topTokensOf(ctx, account, period),
    ctx.credits.get({ account: account.username }),
    latencyOf(ctx, account, period),
  ])
  const { mode, retentionDays } = ctx.config.usage.log
  const latencyShown = { buckets: latency, mode, retentionDays }
  return usagePageView({ signedIn, period, buckets, ...top, credits, latency: latencyShown })
}

/** The Usage page, its CSV download, and each token's credits (owners). */
export function usagePages(app: FastifyInstance, { ctx }: DashboardDeps) {
  app.get('/usage', async (request, reply) => {
    const period = periodAsked(request, ctx.tokens.now())
    if (period === undefined) return noSuchPeriod(reply, '/account/usage')
    return sendPage(reply, await usagePage(ctx, request, period))
  })

  app.get('/usage.csv', async (request, reply) => {
    const { account } = holderOf(request)
    const period = periodAsked(request, ctx.tokens.now())
    if (period === undefined) return noSuchPeriod(reply, '/account/usage')
    const buckets = await bucketsOf(ctx, account, period)
    return reply
      .header('cache-control', 'no-store')
      .header('content-disposition', `attachment; filename="${csvName(account.username, period)}"`)
      .type('text/csv; charset=utf-8')
      .send(usageCsv(buckets))
  })
  creditPages(app, ctx)
}

/** A token's own credits, on its page: owners set and remove them. */
function creditPages(app: FastifyInstance, ctx: AppContext) {
  /** Sets credits from the form, or shows the token's page again with what is wrong (422). */
  const setCredits = async (request: FastifyRequest, reply: FastifyReply, tokenId: string) => {
    const { account, signedIn, actor } = holderOf(request)
    const values = creditForm(form(request))
    const change: CreditChange | FormError = readCredits(values)
    let error: FormError | undefined = isFormError(change) ? change : undefined
    if (!isFormError(change)) {
      try {
        await ctx.tokens.get(account, tokenId)
        await ctx.credits.set({ account: account.username, tokenId }, change, actor)
        return redirect(reply, `/account/tokens/${tokenId}?credits=saved`)
      } catch (err) {
        const { status: _, ...refused } = formError(err)
        error = refused
      }
    }
    const view = { signedIn, creditValues: values, creditError: error }
    return sendPage(reply, await tokenPage(ctx, account, view, tokenId), 422)
  }

  app.post('/tokens/:id/credits', owners, (request, reply) => {
    const { id } = request.params as { id: string }
    return setCredits(request, reply, id)
  })
  app.post('/tokens/:id/credits/remove', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const { id } = request.params as { id: string }
    await ctx.tokens.get(account, id)
    try {
      await ctx.credits.remove({ account: account.username, tokenId: id }, actor)
    } catch (err) {
      // Removed already (another tab, the admin API): what was asked for holds.
      if (!(err instanceof ApiError && err.kind === 'notFound')) throw err
    }
    return redirect(reply, `/account/tokens/${id}?credits=removed`)
  })
}
