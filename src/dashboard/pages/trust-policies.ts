import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, refusal, sendPage, textOf } from '../reply.js'
import type { FieldError, FormError } from '../views/forms.js'
import { type TrustPolicyFormValues, trustPoliciesView } from '../views/trust-policies.js'

const owners = { config: { role: 'owner' as const } }
const notices: Record<string, string> = {
  added: 'Trust policy added',
  removed: 'Trust policy removed',
}
const notAdded = 'The trust policy was not added.'

const readForm = (f: URLSearchParams): TrustPolicyFormValues => ({
  issuer: (f.get('issuer') ?? '').trim(),
  audience: (f.get('audience') ?? '').trim(),
  subject: (f.get('subject') ?? '').trim(),
  claims: f.get('claims') ?? '',
  scopes: new Set(f.getAll('scopes')),
  maxTtl: (f.get('maxTtl') ?? '').trim(),
})

type Read<T> = { ok: T } | { problem: FieldError }

/**
 * The claims field (one `name=glob` a line, blank lines ignored) as the service takes it, or
 * what is wrong with how it is written; what each claim may be is the service's to say.
 */
function claimsOf(text: string): Read<Record<string, string> | undefined> {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '')
  if (lines.length === 0) return { ok: undefined }
  // A Map: a claim named __proto__ is a name like another.
  const claims = new Map<string, string>()
  const problem = (said: string) => ({ problem: { id: 'tp-claims', text: `Claims: ${said}.` } })
  for (const line of lines) {
    const eq = line.indexOf('=')
    if (eq < 0) return problem(`write each line as name=glob (not ${line})`)
    const name = line.slice(0, eq).trim()
    if (claims.has(name)) return problem(`${name} is named twice`)
    claims.set(name, line.slice(eq + 1).trim())
  }
  return { ok: Object.fromEntries(claims) }
}

/** The form as the service's input: numbers as numbers, other text left for it to refuse. */
function policyInput(v: TrustPolicyFormValues): Read<Record<string, unknown>> {
  const claims = claimsOf(v.claims)
  if ('problem' in claims) return claims
  const input: Record<string, unknown> = {
    issuer: v.issuer,
    audience: v.audience,
    subject: v.subject,
    scopes: [...v.scopes],
    maxTtl: /^\d{1,9}$/.test(v.maxTtl) ? Number(v.maxTtl) : v.maxTtl,
  }
  if (claims.ok !== undefined) input.claims = claims.ok
  return { ok: input }
}

/** The service names a policy's fields by their keys (`policies[2].issuer`); the form by its labels. */
const labels: Record<string, [string, string]> = {
  issuer: ['Issuer', 'tp-issuer'],
  audience: ['Audience', 'tp-audience'],
  subject: ['Subject', 'tp-subject'],
  claims: ['Claims', 'tp-claims'],
  scopes: ['Scopes', 'scopes'],
  maxTtl: ['Max TTL (seconds)', 'tp-max-ttl'],
}

/** A sentence of the service in the form's words: the policy's place, its field's label. */
function inFormWords(details: string) {
  const m = /^policies\[(\d+)\]\.(\w+)(.*)$/.exec(details)
  const field = m?.[2] === undefined ? undefined : labels[m[2]]
  if (m === null || field === undefined) return undefined
  const [label, id] = field
  const rest = m[3] ?? ''
  const tail = rest.startsWith('.') ? `: ${rest.slice(1)}` : rest
  const text =
    m[2] === 'scopes' && rest === ' must be a list of scopes'
      ? 'Choose at least one scope'
      : `${label}${tail}`
  return { at: Number(m[1]), id, label, tail, text }
}

/**
 * A refused change as the page shows it: about the policy being added, at its field; about one
 * already there (a scope its plan no longer gives), above the form, naming that policy.
 */
function changeRefusal(message: string, details: string, added?: number): FormError {
  const said = inFormWords(details)
  if (said === undefined) return { message, details }
  if (said.at === added) return { message, fields: [{ id: said.id, text: `${said.text}.` }] }
  return { message, details: `${said.label} of policy ${said.at + 1}${said.tail}` }
}

interface PageMore {
  values?: TrustPolicyFormValues
  error?: FormError
  listError?: FormError
  notice?: string
}

async function policiesPage(ctx: AppContext, request: FastifyRequest, more: PageMore) {
  const { account, signedIn } = holderOf(request)
  return trustPoliciesView({
    signedIn,
    exchangeUrl: `${request.server.publicUrl}/tokens/v2/${account.username}/exchange`,
    policies: (await ctx.exchange.policies(account.username)) ?? [],
    scopes: ctx.catalog.availableTo(account.plan, account.features),
    ...more,
  })
}

/** The trust policies of workload identity exchange: every member reads them, owners change them. */
export function trustPolicyPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  app.get('/trust-policies', async (request, reply) => {
    const { done } = request.query as { done?: string }
    const page = await policiesPage(ctx, request, { notice: textOf(notices, done) })
    return sendPage(reply, page)
  })

  app.post('/trust-policies', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const values = readForm(form(request))
    const input = policyInput(values)
    if ('problem' in input) {
      const error = { message: notAdded, fields: [input.problem] }
      return sendPage(reply, await policiesPage(ctx, request, { values, error }), 422)
    }
    // Added to the list as it is when written, not as it was read here (changePolicies).
    let before = 0
    try {
      await ctx.exchange.changePolicies(
        account,
        (current) => {
          before = current.length
          return [...current, input.ok]
        },
        actor,
      )
      return redirect(reply, '/account/trust-policies?done=added')
    } catch (err) {
      const no = refusal(err, ['invalidResources'])
      const error = changeRefusal(notAdded, no.details ?? '', before)
      return sendPage(reply, await policiesPage(ctx, request, { values, error }), 422)
    }
  })

  // The policy as the page showed it: removed only while it is still there, as it was.
  app.post('/trust-policies/remove', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const shown = form(request).get('policy') ?? ''
    try {
      const removed = await ctx.exchange.changePolicies(
        account,
        (current) => {
          const at = current.findIndex((p) => JSON.stringify(p) === shown)
          return at < 0 ? undefined : current.toSpliced(at, 1)
        },
        actor,
      )
      if (removed === undefined) {
        const listError = {
          message: 'That trust policy was changed or removed already.',
          details: 'the list below is as it is now',
        }
        return sendPage(reply, await policiesPage(ctx, request, { listError }), 409)
      }
      return redirect(reply, '/account/trust-policies?done=removed')
    } catch (err) {
      const no = refusal(err, ['invalidResources'])
      const listError = changeRefusal('The trust policy was not removed.', no.details ?? '')
      return sendPage(reply, await policiesPage(ctx, request, { listError }), 422)
    }
  })
}
