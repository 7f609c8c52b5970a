import type { FastifyInstance } from 'fastify'
import type { DashboardDeps } from '../deps.js'
import { form, formError, holderOf, redirect, refusal, sendPage } from '../reply.js'
import type { FieldError, FormError } from '../views/forms.js'
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

/** The service names the rules by their keys; the form by its labels, its fields by their ids. */
const labels: [RegExp, string, string][] = [
  [/\bmaxSkLifetimeDays\b/g, 'Maximum sk lifetime (days)', 'policy-max-sk'],
  [/\bpkAllowedUrls\b/g, 'Public tokens must have allowed URLs', 'policy-pk-urls'],
  [/\bidleDays\b/g, 'Delete tokens unused for (days)', 'policy-idle'],
  [/\brollGraceMaxHours\b/g, 'Longest grace after a roll (hours)', 'policy-grace'],
]
const inFormWords = (text: string) =>
  labels.reduce((t, [key, label]) => t.replace(key, label), text)

/**
 * A refused policy as the form shows it: each of the service's sentences (one a rule, `; `
 * between them) at the field of the rule it names, in the form's words.
 */
export function policyRefusal(details: string): FormError {
  const fields: FieldError[] = []
  const rest: string[] = []
  for (const part of details.split('; ')) {
    const rule = labels.find(([key]) => part.search(key) >= 0)
    const text = inFormWords(part)
    if (rule === undefined) rest.push(text)
    else fields.push({ id: rule[2], text: `${text.charAt(0).toUpperCase()}${text.slice(1)}.` })
  }
  return {
    message: 'The token policy was not saved.',
    ...(rest.length === 0 ? {} : { details: rest.join('; ') }),
    ...(fields.length === 0 ? {} : { fields }),
  }
}

/** Extend from a notice, and the token policy of the settings page. */
export function hygienePages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { tokens, accounts } = ctx

  app.post('/tokens/:id/extend', developers, async (request, reply) => {
    const { account, signedIn, actor } = holderOf(request)
    const { id } = request.params as { id: string }
    const back = backTo(form(request).get('back'), id)
    const token = await tokens.get(account, id)
    // A rolled token's old string ends with its grace: the token that replaced it is extended.
    if ((await tokens.retiresAt(id)) !== undefined) {
      const error = {
        message: 'This token was rolled: its old string cannot be extended.',
        details: 'extend the token that replaced it',
      }
      return sendPage(reply, await tokenPage(ctx, account, { signedIn, error }, id), 409)
    }
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
      const more = { policyValues: values, policyError: policyRefusal(no.details ?? '') }
      return sendPage(reply, await settingsPage(ctx, request, more), 422)
    }
  })
}
