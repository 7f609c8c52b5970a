import type { TrustPolicy } from '../../exchange/policies.js'
import type { Scope } from '../../scopes/catalog.js'
import { alert, csrf, described, type FormError, fieldError, notice, problemAt } from './forms.js'
import { html, when } from './html.js'
import { layout, type SignedIn } from './layout.js'

/** The form `Add a trust policy` as typed (claims: one `name=glob` a line). */
export interface TrustPolicyFormValues {
  issuer: string
  audience: string
  subject: string
  claims: string
  scopes: ReadonlySet<string>
  maxTtl: string
}

export const emptyTrustPolicyForm: TrustPolicyFormValues = {
  issuer: '',
  audience: '',
  subject: '',
  claims: '',
  scopes: new Set(),
  maxTtl: '900',
}

/** What each field is for, said beneath it. */
const hints = {
  issuer:
    'The identity token’s issuer (iss), exactly: an https URL without a trailing slash, such as https://token.actions.githubusercontent.com.',
  audience:
    'A value the token’s audience (aud) must hold: the one your workload asks its issuer for.',
  subject:
    'The token’s subject (sub), exactly or with * for any run of characters, such as repo:acme/site:ref:refs/heads/main.',
  claims:
    'Optional. Further claims the token must have, one name=glob a line, such as repository_owner=acme.',
  maxTtl: 'How long the temporary token lives at most: 60 to 3600 seconds.',
}

const duration = (seconds: number) =>
  seconds % 60 === 0
    ? `${seconds} seconds (${seconds / 60} minute${seconds === 60 ? '' : 's'})`
    : `${seconds} seconds`

/** One policy's facts, and its Remove button for owners. */
function policyItem(p: TrustPolicy, n: number, signedIn: SignedIn, known: ReadonlySet<string>) {
  const claims = Object.entries(p.claims ?? {})
  const heading = `policy-${n}-heading`
  return html`<section aria-labelledby="${heading}" class="card">
  <h3 id="${heading}">Policy ${n}</h3>
  <dl class="facts">
    <dt>Issuer</dt><dd><code>${p.issuer}</code></dd>
    <dt>Audience</dt><dd><code>${p.audience}</code></dd>
    <dt>Subject</dt><dd><code>${p.subject}</code></dd>
    <dt>Claims</dt><dd>${claims.length === 0 ? html`<span class="none">none</span>` : html`<ul class="tags">${claims.map(([k, v]) => html`<li>${k}=${v}</li>`)}</ul>`}</dd>
    <dt>Scopes</dt><dd><ul class="tags">${p.scopes.map((s) => html`<li>${s}${known.has(s) ? '' : ' (no longer available to this account)'}</li>`)}</ul></dd>
    <dt>Max TTL</dt><dd>${duration(p.maxTtl)}</dd>
  </dl>
  ${
    signedIn.role === 'owner'
      ? html`<form method="post" action="/account/trust-policies/remove" class="inline" novalidate>
    ${csrf(signedIn.csrf)}
    <input type="hidden" name="policy" value="${JSON.stringify(p)}">
    <button type="submit" class="danger" aria-describedby="${heading}">Remove</button>
  </form>`
      : ''
  }
</section>`
}

/**
 * One checkbox per scope of the account, named by its id (its description is the checkbox's
 * description), in one group: what a temporary token of the policy may hold, whatever its kind.
 */
function scopeBoxes(scopes: readonly Scope[], checked: ReadonlySet<string>, problem?: string) {
  const boxes = html`<fieldset class="scopes" aria-describedby="${problem === undefined ? '' : 'scopes-error '}tp-scopes-hint">
  <legend>Scopes</legend>
  <p class="hint" id="tp-scopes-hint">The most a temporary token made under this policy may hold: a workload may ask for fewer.</p>
  ${scopes.map(
    (scope, i) => html`<div class="check">
    <input type="checkbox" id="tp-scope-${i + 1}" name="scopes" value="${scope.id}" aria-describedby="tp-scope-${i + 1}-about"${when(checked.has(scope.id), 'checked')}>
    <label for="tp-scope-${i + 1}">${scope.id}</label>
    <span class="about" id="tp-scope-${i + 1}-about">${scope.description}</span>
  </div>`,
  )}
</fieldset>`
  return problem === undefined
    ? boxes
    : html`<div id="scopes" class="invalid-group" tabindex="-1">${fieldError('scopes', problem)}${boxes}</div>`
}

/** A text field of the form, its hint and, when refused, its sentence. */
function textField(
  [id, name]: [string, keyof typeof hints],
  label: string,
  value: string,
  error: FormError | undefined,
  type = 'text',
) {
  const said = described(`${id}-hint`, id, error)
  return html`<label for="${id}">${label}</label>
  ${said.message}<input id="${id}" name="${name}" type="${type}" value="${value}" spellcheck="false" autocomplete="off"${said.attributes}>
  <p class="hint" id="${id}-hint">${hints[name]}</p>`
}

function addForm(v: TrustPoliciesPage) {
  const values = v.values ?? emptyTrustPolicyForm
  const claims = described('tp-claims-hint', 'tp-claims', v.error)
  const ttl = described('tp-max-ttl-hint', 'tp-max-ttl', v.error)
  return html`<section aria-labelledby="add-heading" class="part">
<h2 id="add-heading">Add a trust policy</h2>
${alert(v.error)}
<form method="post" action="/account/trust-policies" class="card" novalidate>
  ${csrf(v.signedIn.csrf)}
  ${textField(['tp-issuer', 'issuer'], 'Issuer', values.issuer, v.error, 'url')}
  ${textField(['tp-audience', 'audience'], 'Audience', values.audience, v.error)}
  ${textField(['tp-subject', 'subject'], 'Subject', values.subject, v.error)}
  <label for="tp-claims">Claims</label>
  ${claims.message}<textarea id="tp-claims" name="claims" rows="3" spellcheck="false"${claims.attributes}>${values.claims}</textarea>
  <p class="hint" id="tp-claims-hint">${hints.claims}</p>
  ${scopeBoxes(v.scopes, values.scopes, problemAt(v.error, 'scopes'))}
  <label for="tp-max-ttl">Max TTL (seconds)</label>
  ${ttl.message}<input id="tp-max-ttl" name="maxTtl" type="number" inputmode="numeric" min="60" max="3600" step="1" value="${values.maxTtl}"${ttl.attributes}>
  <p class="hint" id="tp-max-ttl-hint">${hints.maxTtl}</p>
  <button type="submit">Add policy</button>
</form>
</section>`
}

/**
 * The trust policies page (docs/machines.md): the exchange URL, each policy, and for owners
 * the form that adds one and a Remove button on each.
 */
export function trustPoliciesView(v: {
  signedIn: SignedIn
  /** Where workloads exchange their identity: PUBLIC_URL + /tokens/v2/<username>/exchange. */
  exchangeUrl: string
  policies: readonly TrustPolicy[]
  scopes: readonly Scope[]
  values?: TrustPolicyFormValues
  error?: FormError
  /** A refusal about the list itself (a Remove of a policy changed meanwhile). */
  listError?: FormError
  notice?: string
}) {
  const owner = v.signedIn.role === 'owner'
  const known = new Set(v.scopes.map((s) => s.id))
  return layout(
    { title: 'Trust policies', signedIn: v.signedIn, section: 'settings' },
    html`${notice(v.notice)}
<p class="lead">Let CI jobs and cloud workloads use this account without storing a secret. A workload sends the identity token its platform signed for it (GitHub Actions, GitLab, Kubernetes, a cloud) to the exchange URL; when a policy below admits it, it gets a temporary token with that policy’s scopes.</p>
<section aria-labelledby="exchange-heading" class="card">
  <h2 id="exchange-heading">Exchange URL</h2>
  <div class="copy-row"><code id="exchange-url" class="token">${v.exchangeUrl}</code><button type="button" class="secondary copy" data-copy="exchange-url" hidden>Copy</button></div>
  <p class="hint">A workload posts its identity token here (an OAuth token exchange, RFC 8693) and receives a temporary token of at most an hour.</p>
  <p class="visually-hidden" id="copy-status" role="status"></p>
</section>
<section aria-labelledby="policies-heading" class="part">
<h2 id="policies-heading">Policies</h2>
${alert(v.listError)}
${
  v.policies.length === 0
    ? html`<p class="none">No trust policies: no workload can exchange its identity for a token of this account.</p>`
    : html`<p class="hint">An identity is checked against the policies in this order: the first that admits it gives the token its scopes and longest life.</p>
${v.policies.map((p, i) => policyItem(p, i + 1, v.signedIn, known))}`
}
</section>
${owner ? addForm(v) : html`<p class="hint">Owners of the account add and remove its trust policies.</p>`}`,
  )
}

type TrustPoliciesPage = Parameters<typeof trustPoliciesView>[0]
