import type { Scope } from '../../scopes/catalog.js'
import type { TokenPolicy } from '../../token-policy.js'
import type { LeakEvidence } from '../../tokens/leaks.js'
import type { TokenView } from '../../tokens/service.js'
import { expiryLine } from './expiry.js'
import { alert, copyable, csrf, type FormError, notice, scopeChoices, time } from './forms.js'
import { html } from './html.js'
import { layout, type SignedIn } from './layout.js'
import { type NoticeShown, noticesSection } from './notices.js'
import { tokenName } from './token-name.js'
import { lastUsedText } from './usage.js'

const list = (items: readonly string[], none: string) =>
  items.length === 0
    ? html`<span class="none">${none}</span>`
    : html`<ul class="tags">${items.map((i) => html`<li>${i}</li>`)}</ul>`

export function tokensView(v: {
  signedIn: SignedIn
  tokens: TokenView[]
  next?: string
  previous?: string
  /** The last use of each token of the page that was ever used (ctx.usage.lastUsed). */
  lastUsed: ReadonlyMap<string, string>
  /** The service clock: what `unused for 90 days` is measured from. */
  now: number
  notice?: string
  /** Tokens of the account reported leaked and kept: id → when, where and by whom. */
  leaked?: ReadonlyMap<string, LeakEvidence>
  /** What needs attention soon (ctx.hygiene.upcoming), with Extend's end where allowed. */
  notices?: readonly NoticeShown[]
}) {
  const leakedHere = v.tokens.filter((t) => v.leaked?.has(t.id))
  const retiring = new Map(
    (v.notices ?? []).filter((n) => n.kind === 'retiring').map((n) => [n.token.id, n.at]),
  )
  const row = (t: TokenView, i: number) => html`<tr>
  <th scope="row">
    <a href="/account/tokens/${t.id}">${tokenName(t)}</a>${t.default ? html` <span class="badge">default</span>` : ''}
    ${expiryLine(t, v.now, retiring.get(t.id))}
    ${t.token === undefined ? '' : copyable(`token-${i}`, t.token)}
  </th>
  <td data-label="Usage"><span class="usage usage-${t.usage}">${t.usage}</span></td>
  <td data-label="Scopes">${list(t.scopes, 'no scopes')}</td>
  <td data-label="Allowed URLs">${list(t.allowedUrls ?? [], 'any URL')}</td>
  <td data-label="Created">${time(t.created)}</td>
  <td data-label="Modified">${time(t.modified)}</td>
  <td data-label="Last used">${lastUsedText(v.lastUsed.get(t.id), t.created, v.now)}</td>
</tr>`
  const pager =
    v.next === undefined && v.previous === undefined
      ? ''
      : html`<nav class="pager" aria-label="Pages">
  ${v.previous === undefined ? '' : html`<a href="/account?before=${encodeURIComponent(v.previous)}">Previous page</a>`}
  ${v.next === undefined ? '' : html`<a href="/account?start=${encodeURIComponent(v.next)}">Next page</a>`}
</nav>`
  return layout(
    { title: 'Access tokens', signedIn: v.signedIn, section: 'tokens' },
    html`${
      (v.leaked?.size ?? 0) === 0
        ? ''
        : html`<div role="alert" class="error leak"><p><strong>${String(v.leaked?.size)} token${v.leaked?.size === 1 ? ' was' : 's were'} reported leaked</strong>: found where others can see ${v.leaked?.size === 1 ? 'it' : 'them'}. Roll ${v.leaked?.size === 1 ? 'it' : 'them'} and give your applications the new strings${leakedHere.length === 0 ? '.' : html`: ${leakedHere.map((t, i) => html`${i > 0 ? ', ' : ''}<a href="/account/tokens/${t.id}">${tokenName(t)}</a>`)}.`}</p>${
            leakedHere.length === 0
              ? ''
              : html`<ul class="leak-reports">${leakedHere.map((t) => html`<li><a href="/account/tokens/${t.id}">${tokenName(t)}</a>: ${leakReport(v.leaked?.get(t.id))}</li>`)}</ul>`
          }</div>`
    }${notice(v.notice)}${noticesSection({ signedIn: v.signedIn, notices: v.notices ?? [], now: v.now, back: '/account' })}
<p class="lead">Tokens let your applications call the API. Public tokens (pk) may be used in web pages; secret tokens (sk) belong on your servers.</p>
${
  v.signedIn.role === 'viewer'
    ? html`<p class="hint">You are a viewer in this account: you can read everything here and change nothing.</p>`
    : html`<p class="actions"><a class="button" href="/account/tokens/new">Create a token</a> <a class="button secondary" href="/account/temporary">Create a temporary token</a></p>`
}
<p class="visually-hidden" id="copy-status" role="status"></p>
<table class="tokens">
<caption class="visually-hidden">Your access tokens</caption>
<thead><tr><th scope="col">Token</th><th scope="col">Usage</th><th scope="col">Scopes</th><th scope="col">Allowed URLs</th><th scope="col">Created</th><th scope="col">Modified</th><th scope="col">Last used</th></tr></thead>
<tbody>
${v.tokens.map(row)}
</tbody>
</table>
${pager}`,
  )
}

export interface TokenFormValues {
  note: string
  scopes: ReadonlySet<string>
  allowedUrls: string
  /** One address or CIDR block a line. */
  allowedIps: string
  /** The end of life as the datetime-local field holds it (UTC, `YYYY-MM-DDTHH:MM`); '' never. */
  expiresAt: string
  /** On a token's page: the end the form showed, so that an unchanged field changes nothing. */
  expiresAtShown?: string
}

const usageHint = (scopes: readonly Scope[], checked: ReadonlySet<string>) =>
  scopes.some((s) => !s.public && checked.has(s.id))
    ? 'This will be a secret token (sk).'
    : 'This will be a public token (pk).'

/** What the account's token policy asks of a token's URLs and end, said beside those fields. */
const policyHints = (p: TokenPolicy) => ({
  urls: p.pkAllowedUrls ? ' Your account’s token policy: a public token needs at least one.' : '',
  end:
    p.maxSkLifetimeDays === undefined
      ? ''
      : ` Your account’s token policy: a secret token must expire within ${p.maxSkLifetimeDays} day${p.maxSkLifetimeDays === 1 ? '' : 's'}.`,
})

export const fields = (
  scopes: readonly Scope[],
  values: TokenFormValues,
  policy: TokenPolicy = {},
) => {
  const says = policyHints(policy)
  return html`<label for="note">Note</label>
  <input id="note" name="note" maxlength="1024" value="${values.note}" aria-describedby="note-hint">
  <p class="hint" id="note-hint">What the token is for, so that you recognise it later.</p>
  ${scopeChoices(scopes, values.scopes)}
  <label for="allowed-urls">Allowed URLs</label>
  <textarea id="allowed-urls" name="allowedUrls" rows="4" spellcheck="false" aria-describedby="urls-hint">${values.allowedUrls}</textarea>
  <p class="hint" id="urls-hint">One a line: a URL or host name (<code>example.com</code>, <code>*.example.com</code>, <code>https://example.com:8080/maps</code>). Empty: usable from anywhere. A restricted token cannot be used from mobile apps.${says.urls}</p>
  <label for="allowed-ips">Allowed IP addresses</label>
  <textarea id="allowed-ips" name="allowedIps" rows="3" spellcheck="false" aria-describedby="ips-hint">${values.allowedIps}</textarea>
  <p class="hint" id="ips-hint">One a line: an IPv4 or IPv6 address or a CIDR block (<code>203.0.113.7</code>, <code>198.51.100.0/24</code>, <code>2001:db8::/32</code>). Empty: usable from any address. Best for secret tokens used by your servers.</p>
  <label for="expires-at">Expires at</label>
  <input id="expires-at" name="expiresAt" type="datetime-local" value="${values.expiresAt}" aria-describedby="expires-at-hint">
  ${values.expiresAtShown === undefined ? '' : html`<input type="hidden" name="expiresAtShown" value="${values.expiresAtShown}">`}
  <p class="hint" id="expires-at-hint">The date and time in UTC (not your local time) from which every request with the token is refused. Empty: it never expires.${says.end}</p>`
}

export function newTokenView(v: {
  signedIn: SignedIn
  scopes: readonly Scope[]
  values: TokenFormValues
  error?: FormError
  /** The account's token policy, told beside the fields it concerns. */
  policy?: TokenPolicy
}) {
  return layout(
    { title: 'Create a token', signedIn: v.signedIn, section: 'tokens' },
    html`${alert(v.error)}
<form method="post" action="/account/tokens/new" class="card" novalidate>
  ${csrf(v.signedIn.csrf)}
  ${fields(v.scopes, v.values, v.policy)}
  <p class="usage-hint" id="usage-hint" aria-live="polite">${usageHint(v.scopes, v.values.scopes)}</p>
  <button type="submit">Create token</button>
  <a href="/account" class="cancel">Cancel</a>
</form>`,
  )
}

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
  <div class="copy-row"><input id="new-token" readonly value="${v.token}" spellcheck="false"><button type="button" class="secondary copy" data-copy="new-token">Copy</button></div>
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
