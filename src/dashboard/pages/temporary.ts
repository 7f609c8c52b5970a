import type { FastifyInstance } from 'fastify'
import { ApiError } from '../../errors.js'
import { isoTime } from '../../time.js'
import type { DashboardDeps } from '../deps.js'
import { form, formError, holderOf, sendPage } from '../reply.js'
import { revealView, temporaryView } from '../views/tokens.js'
import { askedForm, filledIn, makesTokens, tokenMakingRefusal } from './token-form.js'

/**
 * `Expires in (minutes)` as the API's `expires`. Outside 1 to 60 minutes the answer is the
 * contract's own message for an expiry in the past or too far ahead.
 */
const developers = { config: { role: 'developer' as const } }

export function expiresAt(minutes: string, now: number): string {
  const text = minutes.trim()
  if (!/^[+-]?\d{1,6}$/.test(text)) {
    throw new ApiError(
      'invalidResources',
      'expires in (minutes) must be a whole number from 1 to 60',
    )
  }
  const n = Number(text)
  if (n < 1) throw new ApiError('expiresInPast', 'a temporary token lasts at least 1 minute')
  if (n > 60) throw new ApiError('expiresTooFar', 'a temporary token lasts at most 60 minutes')
  return isoTime(now + n * 60_000)
}

export function temporaryPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { tokens, accounts, catalog } = ctx
  const scopesOf = (a: { plan: string; features: string[] }) =>
    catalog.availableTo(a.plan, a.features)

  // Empty, or filled in as it was left for "Confirm it's you".
  app.get('/temporary', developers, async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const asked = askedForm(request.url)
    const values = {
      scopes: new Set(asked.getAll('scopes')),
      minutes: asked.get('minutes') ?? '60',
    }
    return sendPage(reply, temporaryView({ signedIn, scopes: scopesOf(account), values }))
  })

  app.post('/temporary', developers, async (request, reply) => {
    const { account, signedIn, actor, session } = holderOf(request)
    const f = form(request)
    const values = { scopes: new Set(f.getAll('scopes')), minutes: f.get('minutes') ?? '' }
    // A temporary token with tokens:write makes permanent ones.
    const next = filledIn('/account/temporary', [
      ...[...values.scopes].map((scope): [string, string] => ['scopes', scope]),
      ['minutes', values.minutes],
    ])
    const unproven = tokenMakingRefusal(session, tokens.now(), makesTokens(values.scopes), next)
    if (unproven !== undefined) {
      const view = temporaryView({ signedIn, scopes: scopesOf(account), values, error: unproven })
      return sendPage(reply, view, 403)
    }
    try {
      const expires = expiresAt(values.minutes, tokens.now())
      const result = await tokens.createTemporary(
        account,
        accounts.holder(account),
        {
          expires,
          scopes: [...values.scopes],
        },
        actor,
      )
      const view = revealView({
        signedIn,
        token: result.token,
        usage: 'tk',
        expires: result.expires,
      })
      return sendPage(reply, view)
    } catch (err) {
      const { status, ...error } = formError(err)
      return sendPage(
        reply,
        temporaryView({ signedIn, scopes: scopesOf(account), values, error }),
        status,
      )
    }
  })
}
