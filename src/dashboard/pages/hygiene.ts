import type { FastifyInstance } from 'fastify'
import { ApiError } from '../../errors.js'
import type { DashboardDeps } from '../deps.js'
import { form, formError, holderOf, redirect, refusal, refused, sendPage } from '../reply.js'
import type { PolicyFormValues } from '../views/token-policy.js'
import { settingsPage } from './account.js'
import { extendTo } from './hygiene-data.js'
import { tokenPage } from './tokens.js'

const developers = { config: { role: 'developer' as const } }
const owners = { config: { role: 'owner' as const } }

/** The pages Extend may return to: the tokens page, settings, or the token's own page. */
const backTo = (asked: string | null, id: string) =>
  asked === '/account' || asked === '/account/settings' ? asked : `/account/tokens/${id}`

/** The policy form as typed. */
const readPolicyForm = (f: URLSearchParams): PolicyFormValues => ({
  maxSkLifetimeDays: (f.get('maxSkLifetimeDays') ?? '').trim(),
  pkAllowedUrls: f.get('pkAllowedUrls') !== null,
  idleDays: (f.get('idleDays') ?? '').trim(),
  rollGraceMaxHours: (f.get('rollGraceMaxHours') ?? '').trim(),
})

/** The form as the service takes it: empty is no rule; other text is left for it to refuse. */
function policyInput(v: PolicyFormValues): Record<string, unknown> {
  const whole = (text: string) => (/^-?\d+$/.test(text) ? Number(text) : text)
  const input: Record<string, unknown> = {}
  for (const key of ['maxSkLifetimeDays', 'idleDays', 'rollGraceMaxHours'] as const) {
    if (v[key] !== '') input[key] = whole(v[key])
  }
  if (v.pkAllowedUrls) input.pkAllowedUrls = true
  return input
}

/** The service names the rules by their keys; the form by its labels. */
const labels: [RegExp, string][] = [
  [/\bmaxSkLifetimeDays\b/g, 'Maximum sk lifetime (days)'],
  [/\bidleDays\b/g, 'Delete tokens unused for (days)'],
  [/\brollGraceMaxHours\b/g, 'Longest grace after a roll (hours)'],
]
const inFormWords = (text: string) =>
  labels.reduce((t, [key, label]) => t.replace(key, label), text)

/** Extend from a notice, and the token policy of the settings page. */
export function hygienePages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { tokens, accounts } = ctx

  app.post('/tokens/:id/extend', developers, async (request, reply) => {
    const { account, signedIn, actor } = holderOf(request)
    const { id } = request.params as { id: string }
    const back = backTo(form(request).get('back'), id)
    const token = await tokens.get(account, id)
    const to = extendTo(token, accounts.tokenPolicy(account).effective, tokens.now())
    if (to === undefined) return redirect(reply, back)
    try {
      await tokens.update(account, accounts.holder(account), id, { expiresAt: to }, actor)
      return redirect(reply, `${back}?done=extended`)
    } catch (err) {
      const { status, ...error } = formError(err)
      return sendPage(reply, await tokenPage(ctx, account, { signedIn, error }, id), status)
    }
  })

  app.post('/settings/token-policy', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const values = readPolicyForm(form(request))
    try {
      await accounts.setTokenPolicy(account.username, policyInput(values), actor)
      return redirect(reply, '/account/settings?done=token-policy')
    } catch (err) {
      const no = refusal(err, ['tokenPolicy'])
      // In the form's words first, then as the error table tells a person.
      const { message } = refused(new ApiError(no.kind, inFormWords(no.details ?? '')))
      const more = { policyValues: values, policyError: { message } }
      return sendPage(reply, await settingsPage(ctx, request, more), 422)
    }
  })
}
