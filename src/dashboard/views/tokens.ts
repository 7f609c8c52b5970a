import type { Scope } from '../../scopes/catalog.js'
import type { LeakEvidence } from '../../tokens/leaks.js'
import type { TokenView } from '../../tokens/service.js'
import { alert, csrf, type FormError, scopeChoices, time } from './forms.js'
import { html } from './html.js'
import { layout, type SignedIn } from './layout.js'
import { tokenName } from './token-name.js'

const reporters: Record<string, string> = {
  github: "by GitHub's secret scanning",
  admin: "by the operator's scanners",
  public: 'anonymously',
}

/**
 * Who reported a kept token, when, and where they found it (as they say: shown as text, never
 * a link, since anyone may report).
 */
export const leakReport = (e: LeakEvidence | undefined) =>
  e === undefined
    ? ''
    : html`reported ${e.via === undefined ? '' : html`${reporters[e.via] ?? e.via} `}${time(e.at)}${e.url === undefined ? '' : html`, found at <code class="leak-url">${e.url}</code>`}${e.source === undefined ? '' : html` (${e.source})`}`

export function deleteView(v: { signedIn: SignedIn; token: TokenView; error?: FormError }) {
  return layout(
    { title: 'Delete this token?', signedIn: v.signedIn, section: 'tokens' },
    html`${alert(v.error)}
<p>The token <strong>${tokenName(v.token)}</strong> (<code>${v.token.id}</code>) stops working at once: every request that uses it is refused. This cannot be undone.</p>
<form method="post" action="/account/tokens/${v.token.id}/delete" class="actions" novalidate>
  ${csrf(v.signedIn.csrf)}
  <button type="submit" class="danger">Delete</button>
  <a href="/account/tokens/${v.token.id}" class="cancel">Cancel</a>
</form>`,
  )
}

export function revealView(v: {
  signedIn: SignedIn
  token: string
  usage: 'pk' | 'sk' | 'tk'
  id?: string
  expires?: string
  /** After a roll: when the old string stops working. */
  oldEnds?: string
}) {
  const about = {
    pk: 'A public token: you can see it again on the tokens page.',
    sk: 'Copy it now and keep it somewhere safe: it will not be shown again.',
    tk: `A temporary token: it stops working at ${v.expires ?? ''}. It will not be shown again.`,
  }[v.usage]
  return layout(
    { title: 'Token created', signedIn: v.signedIn, section: 'tokens' },
    html`${v.oldEnds === undefined ? '' : html`<p class="notice">Token rolled. The old token ${v.oldEnds}.</p>`}
<p class="${v.usage === 'pk' ? 'notice' : 'warning'}">${about}</p>
<div class="card">
  <label for="new-token">New token</label>
  <div class="copy-row"><input id="new-token" readonly value="${v.token}" spellcheck="false"><button type="button" class="secondary copy" data-copy="new-token" hidden>Copy</button></div>
  <p class="visually-hidden" id="copy-status" role="status"></p>
</div>
<p class="actions"><a href="/account">Back to access tokens</a>${v.id === undefined ? '' : html` · <a href="/account/tokens/${v.id}">Token settings</a>`}</p>`,
  )
}

export function temporaryView(v: {
  signedIn: SignedIn
  scopes: readonly Scope[]
  values: { scopes: ReadonlySet<string>; minutes: string }
  error?: FormError
}) {
  return layout(
    { title: 'Create a temporary token', signedIn: v.signedIn, section: 'tokens' },
    html`<p class="lead">A temporary token (tk) works for up to an hour and cannot be revoked: hand it to a client that needs access for a short while.</p>
${alert(v.error)}
<form method="post" action="/account/temporary" class="card" novalidate>
  ${csrf(v.signedIn.csrf)}
  ${scopeChoices(v.scopes, v.values.scopes)}
  <label for="expires-in">Expires in (minutes)</label>
  <input id="expires-in" name="minutes" type="number" inputmode="numeric" min="1" max="60" step="1" value="${v.values.minutes}" aria-describedby="expires-hint">
  <p class="hint" id="expires-hint">1 to 60 minutes.</p>
  <button type="submit">Create temporary token</button>
  <a href="/account" class="cancel">Cancel</a>
</form>`,
  )
}
