import type { AuditAction, AuditEvent } from '../../audit/events.js'
import type { TokenView } from '../../tokens/service.js'
import { time } from './forms.js'
import { type Html, html } from './html.js'

/** An audit event in the words of the Activity page: what happened, by whom, to what. */

const actions: Record<AuditAction, string> = {
  'token.created': 'Token created',
  'token.temporary_issued': 'Temporary token issued',
  'token.updated': 'Token updated',
  'token.deleted': 'Token deleted',
  'token.rolled': 'Token rolled',
  'token.leaked': 'Token reported leaked',
  'token.expiring': 'Token expiring soon',
  'token.retiring': 'Rolled token ending soon',
  'token.idle': 'Unused token to be deleted',
  'token.exchanged': 'Identity exchanged for a temporary token',
  'token.exchange_refused': 'Identity exchange refused',
  'trust_policies.changed': 'Trust policies changed',
  'token_policy.changed': 'Token policy changed',
  'ratelimits.changed': 'Rate limits changed',
  'ratelimit_override.set': 'Rate limit override set',
  'ratelimit_override.deleted': 'Rate limit override removed',
  'account.created': 'Account created',
  'account.changed': 'Plan or features changed',
  'account.disabled': 'Account disabled',
  'account.enabled': 'Account enabled',
  'account.deleted': 'Account deleted',
  'account.invited': 'Setup link issued',
  'password.set': 'Password set',
  'member.invited': 'Member invited',
  'member.added': 'Member joined',
  'member.role_changed': 'Role changed',
  'member.removed': 'Member removed',
  'invitation.revoked': 'Invitation revoked',
  'portal_link.created': 'Portal link created',
  'factor.added': 'Second factor added',
  'factor.removed': 'Second factor removed',
  'recovery_code.used': 'Recovery code used',
  'recovery_codes.generated': 'New recovery codes',
  'policy.changed': 'Sign-in policy changed',
  'password.changed': 'Password changed',
  'signin.succeeded': 'Signed in',
  'signin.failed': 'Sign-in failed',
  'sessions.ended': 'Signed out',
  'signing_key.added': 'Signing key added',
  'admin_key.created': 'Admin key created',
  'admin_key.revoked': 'Admin key revoked',
  'webhook.created': 'Webhook endpoint added',
  'webhook.deleted': 'Webhook endpoint removed',
  'credits.changed': 'Credits changed',
  'credits.threshold': 'Credits running out',
}

export function whatHappened(e: AuditEvent): string {
  if (e.action === 'sessions.ended' && e.details?.which === 'all') return 'Signed out everywhere'
  return actions[e.action] ?? e.action
}

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []

const fieldNames: Record<string, string> = {
  note: 'note',
  scopes: 'scopes',
  allowedUrls: 'allowed URLs',
}

const scopeList = (value: unknown) => {
  const scopes = strings(value)
  return scopes.length === 0 ? 'no scopes' : scopes.join(', ')
}

/** What a credits change did: `Set to 1000 · refill 1000 monthly`, `Increment 50 · 1050 left`. */
function creditChange(d: Record<string, unknown>): string {
  const left = typeof d.remaining === 'number' ? ` · ${d.remaining} left` : ''
  const refill = d.refill as { interval?: unknown; amount?: unknown } | null | undefined
  switch (d.operation) {
    case 'set':
      return `Set to ${String(d.remaining)}${refill?.interval === undefined ? '' : ` · refill ${String(refill.amount)} ${String(refill.interval)}`}`
    case 'increment':
    case 'decrement':
      return `${d.operation === 'increment' ? 'Increment' : 'Decrement'} ${String(d.amount)}${left}`
    case 'remove':
      return 'Limit removed'
    default:
      return ''
  }
}

/** The particulars an event's details hold, in a line; none for most. */
export function particulars(e: AuditEvent): Html | string {
  const d = e.details ?? {}
  switch (e.action) {
    case 'token.created':
      return `${typeof d.usage === 'string' ? `${d.usage} · ` : ''}${scopeList(d.scopes)}`
    case 'token.temporary_issued':
      return typeof d.expires === 'string'
        ? html`${scopeList(d.scopes)} · until ${time(d.expires)}`
        : scopeList(d.scopes)
    case 'token.updated': {
      const fields = strings(d.fields).map((f) => fieldNames[f] ?? f)
      return fields.length === 0 ? '' : `Changed: ${fields.join(', ')}`
    }
    case 'account.created':
    case 'account.changed': {
      const features = strings(d.features)
      return typeof d.plan === 'string'
        ? `Plan ${d.plan}${features.length === 0 ? '' : ` · features ${features.join(', ')}`}`
        : ''
    }
    case 'member.invited':
    case 'member.added':
    case 'member.role_changed':
    case 'portal_link.created':
      return typeof d.role === 'string' ? `Role ${d.role}` : ''
    case 'credits.changed':
      return creditChange(d)
    case 'credits.threshold':
      return typeof d.threshold === 'number' && typeof d.remaining === 'number'
        ? `${d.threshold}% spent · ${d.remaining} left`
        : ''
    default:
      return ''
  }
}

const methodText = {
  password: 'password',
  passkey: 'passkey',
  link: 'portal link',
  sso: 'single sign-on',
  'setup link': 'setup link',
}

const shortId = (id: string) => (id.length > 9 ? `${id.slice(0, 8)}…` : id)

/** Who did it: an API token, the dashboard, the command line, an operator, or nobody yet. */
export function actorText(e: AuditEvent): Html {
  const { type, id, usage } = e.actor
  switch (type) {
    case 'token':
      // A no-break space: the kind stays beside the id.
      if (id === undefined) return html`Temporary token${usage ? `\u00a0(${usage})` : ''}`
      return html`API token <code>${shortId(id)}</code>${usage ? `\u00a0(${usage})` : ''}`
    case 'session': {
      if (e.actor.login === undefined) return html`Dashboard session`
      const how = e.actor.method === undefined ? '' : ` (${methodText[e.actor.method]})`
      return html`<span class="person">${e.actor.login}</span>${how}`
    }
    case 'cli':
      return html`Command line`
    case 'admin':
      return id === undefined ? html`Operator` : html`Operator (admin key ${id})`
    default:
      if (e.actor.login !== undefined) {
        const method = e.action === 'password.set' ? 'setup link' : e.actor.method
        const how = method === undefined ? '' : ` (${methodText[method]})`
        return html`<span class="person">${e.actor.login}</span>${how}`
      }
      // Before any session: the sign-in page, a setup link or the sign-up page.
      if (e.action === 'signin.succeeded' || e.action === 'signin.failed') return html`Sign-in page`
      if (e.action === 'password.set') return html`Setup link`
      if (e.action === 'account.created') return html`Sign-up page`
      return html`Not signed in`
  }
}

/**
 * What it was done to: a token (a link to its page while it exists), the account, sessions.
 * `tokens` holds the account's tokens the page's events name, as they are now.
 */
export function targetText(e: AuditEvent, tokens: ReadonlyMap<string, TokenView>): Html {
  const { type, id } = e.target
  if (type === 'token') {
    if (id === undefined) return html`A temporary token`
    const token = tokens.get(id)
    if (token === undefined) {
      return html`Token <code>${shortId(id)}</code> <span class="none">(deleted)</span>`
    }
    const name = token.note !== '' ? token.note : token.default ? 'Default public token' : id
    return html`<a href="/account/tokens/${id}">${name}</a> <code class="id">${shortId(id)}</code>`
  }
  if (type === 'account') return html`Your account`
  if (type === 'member') return html`Member <span class="person">${id ?? ''}</span>`
  if (type === 'invitation' || type === 'portal_link') {
    const email = typeof e.details?.email === 'string' ? e.details.email : ''
    return html`${type === 'invitation' ? 'Invitation' : 'Portal link'} for ${email}`
  }
  if (type === 'session') {
    return e.details?.which === 'all' ? html`Every session` : html`A dashboard session`
  }
  return html`${type.replace('_', ' ')}${id === undefined ? '' : html` <code>${id}</code>`}`
}
