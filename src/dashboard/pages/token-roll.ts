import type { FastifyInstance } from 'fastify'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, refusal, refused, sendPage } from '../reply.js'
import { revealView } from '../views/tokens.js'
import { makesTokens, tokenMakingRefusal } from './token-form.js'
import { tokenPage } from './tokens.js'

const developers = { config: { role: 'developer' as const } }

/** Rolling a token: a new string now, the old one kept for the grace chosen. */
export function tokenRollPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { tokens, accounts } = ctx

  app.post('/tokens/:id/roll', developers, async (request, reply) => {
    const { account, signedIn, actor, session } = holderOf(request)
    const { id } = request.params as { id: string }
    // The new string of a token that makes tokens is such a token, made anew.
    const makes = makesTokens((await tokens.get(account, id)).scopes)
    const unproven = tokenMakingRefusal(session, tokens.now(), makes, `/account/tokens/${id}`)
    if (unproven !== undefined) {
      const view = await tokenPage(ctx, account, { signedIn, error: unproven }, id)
      return sendPage(reply, view, 403)
    }
    const when = form(request).get('when')
    const hours = when === '24h' ? 24 : when === '1h' ? 1 : 0
    const expires =
      hours === 0 ? undefined : new Date(tokens.now() + hours * 3_600_000).toISOString()
    let rolled: Awaited<ReturnType<typeof tokens.roll>>
    try {
      rolled = await tokens.roll(account, accounts.holder(account), id, { expires }, actor)
    } catch (err) {
      // Rolled already (here, by another tab, the API or the CLI): its page says so; and a
      // grace longer than the token policy allows.
      const no = refusal(err, ['tokenRetiring', 'tokenPolicy'])
      const error =
        no.kind === 'tokenPolicy' ? refused(no) : { message: no.message, details: no.details }
      return sendPage(reply, await tokenPage(ctx, account, { signedIn, error }, id), no.statusCode)
    }
    const oldEnds =
      hours === 0
        ? 'has stopped working'
        : `works until ${expires?.slice(0, 16).replace('T', ' ')} UTC`
    const view = revealView({
      signedIn,
      token: rolled.token ?? '',
      usage: rolled.usage,
      id: rolled.id,
      oldEnds,
    })
    return sendPage(reply, view)
  })
}
