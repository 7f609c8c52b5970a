import type { Scope } from '../../scopes/catalog.js'
import type { TokenPolicy } from '../../token-policy.js'
import { alert, csrf, described, type FormError, problemAt, scopeChoices } from './forms.js'
import { html, when } from './html.js'
import { layout, type SignedIn } from './layout.js'

/** A token form as typed: the new-token page's, and a token's own settings. */
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

/**
 * The fields of a token form, each with the sentence a refusal says about it (`error.fields`).
 * `create`: the new-token form, where a note and a scope are required.
 */
export const fields = (
  scopes: readonly Scope[],
  values: TokenFormValues,
  policy: TokenPolicy = {},
  form: { error?: FormError; create?: boolean } = {},
) => {
  const says = policyHints(policy)
  const { error, create = false } = form
  const note = described('note-hint', 'note', error)
  const urls = described('urls-hint', 'allowed-urls', error)
  const ips = described('ips-hint', 'allowed-ips', error)
  const end = described('expires-at-hint', 'expires-at', error)
  return html`<label for="note">Note</label>
  ${note.message}<input id="note" name="note" maxlength="1024" value="${values.note}"${when(create, 'required')}${note.attributes}>
  <p class="hint" id="note-hint">${create ? 'Required: what' : 'What'} the token is for, so that you recognise it later.</p>
  ${create ? html`<p class="hint" id="scopes-hint">Choose at least one scope: a token may do only what its scopes allow.</p>` : ''}
  ${scopeChoices(scopes, values.scopes, problemAt(error, 'scopes'))}
  <label for="allowed-urls">Allowed URLs</label>
  ${urls.message}<textarea id="allowed-urls" name="allowedUrls" rows="4" spellcheck="false"${urls.attributes}>${values.allowedUrls}</textarea>
  <p class="hint" id="urls-hint">One a line: a URL or host name (<code>example.com</code>, <code>*.example.com</code>, <code>https://example.com:8080/maps</code>). Empty: usable from anywhere. A restricted token cannot be used from mobile apps.${says.urls}</p>
  <label for="allowed-ips">Allowed IP addresses</label>
  ${ips.message}<textarea id="allowed-ips" name="allowedIps" rows="3" spellcheck="false"${ips.attributes}>${values.allowedIps}</textarea>
  <p class="hint" id="ips-hint">One a line: an IPv4 or IPv6 address or a CIDR block (<code>203.0.113.7</code>, <code>198.51.100.0/24</code>, <code>2001:db8::/32</code>). Empty: usable from any address. Best for secret tokens used by your servers.</p>
  <label for="expires-at">Expires at</label>
  ${end.message}<input id="expires-at" name="expiresAt" type="datetime-local" value="${values.expiresAt}"${end.attributes}>
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
  ${fields(v.scopes, v.values, v.policy, { error: v.error, create: true })}
  <p class="usage-hint" id="usage-hint" aria-live="polite">${usageHint(v.scopes, v.values.scopes)}</p>
  <button type="submit">Create token</button>
  <a href="/account" class="cancel">Cancel</a>
</form>`,
  )
}
