import type { TokenPolicy } from '../../token-policy.js'
import { alert, csrf, described, type FormError } from './forms.js'
import { html, when } from './html.js'
import type { SignedIn } from './layout.js'

/** An account's token policy as ctx.accounts.tokenPolicy tells it. */
export interface PolicyShown {
  own: TokenPolicy
  plan: TokenPolicy
  effective: TokenPolicy
}

/** The token policy form as typed (numbers as text: empty is no rule). */
export interface PolicyFormValues {
  maxSkLifetimeDays: string
  pkAllowedUrls: boolean
  idleDays: string
  rollGraceMaxHours: string
}

export const policyValues = (own: TokenPolicy): PolicyFormValues => ({
  maxSkLifetimeDays: own.maxSkLifetimeDays?.toString() ?? '',
  pkAllowedUrls: own.pkAllowedUrls === true,
  idleDays: own.idleDays?.toString() ?? '',
  rollGraceMaxHours: own.rollGraceMaxHours?.toString() ?? '',
})

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`

/** What holds, in words. */
const inEffect = (p: TokenPolicy) => html`<dl class="facts">
  <dt>Secret tokens</dt><dd>${p.maxSkLifetimeDays === undefined ? 'may live forever' : `must expire within ${plural(p.maxSkLifetimeDays, 'day')}`}</dd>
  <dt>Public tokens</dt><dd>${p.pkAllowedUrls ? 'must have allowed URLs' : 'may be used from any URL'}</dd>
  <dt>Unused tokens</dt><dd>${p.idleDays === undefined ? 'are kept' : `are deleted after ${plural(p.idleDays, 'day')}`}</dd>
  <dt>After a roll</dt><dd>${p.rollGraceMaxHours === undefined ? 'the old string works up to 24 hours' : `the old string works at most ${plural(p.rollGraceMaxHours, 'hour')}`}</dd>
</dl>`

const planSays = (limit: number | undefined, unit: string) =>
  limit === undefined
    ? ''
    : ` Your plan sets at most ${plural(limit, unit)}: yours may only be lower.`

/**
 * A whole-number rule: its field, named by `label`, posted as `name`, with the sentence a
 * refusal says about it.
 */
function number(
  [id, name]: [string, keyof PolicyFormValues],
  label: string,
  value: string,
  range: [number, number],
  about: string,
  error: FormError | undefined,
) {
  const said = described(`${id}-hint`, id, error)
  return html`<label for="${id}">${label}</label>
  ${said.message}<input id="${id}" name="${name}" type="number" inputmode="numeric" min="${range[0]}" max="${range[1]}" step="1" value="${value}"${said.attributes}>
  <p class="hint" id="${id}-hint">${about}</p>`
}

/** The owner's form: each rule, with what the plan sets. */
function policyForm(signedIn: SignedIn, plan: TokenPolicy, v: PolicyFormValues, error?: FormError) {
  const planUrls = plan.pkAllowedUrls === true
  const urls = described('policy-pk-urls-about', 'policy-pk-urls', error)
  return html`<form method="post" action="/account/settings/token-policy" novalidate>
    ${csrf(signedIn.csrf)}
    ${number(['policy-max-sk', 'maxSkLifetimeDays'], 'Maximum sk lifetime (days)', v.maxSkLifetimeDays, [1, 3650], `New secret tokens must expire within this many days (1 to 3650): their Expires at is required, and a change may not remove it or move it later. Empty: no limit.${planSays(plan.maxSkLifetimeDays, 'day')}`, error)}
    <div class="check">
      ${urls.message}<input type="checkbox" id="policy-pk-urls" name="pkAllowedUrls"${when(v.pkAllowedUrls || planUrls, 'checked')}${when(planUrls, 'disabled')}${urls.attributes}>
      <label for="policy-pk-urls">Public tokens must have allowed URLs</label>
      <span class="about" id="policy-pk-urls-about">New public tokens need at least one allowed URL, and a change may not clear them.${planUrls ? ' Your plan requires it.' : ''}</span>
    </div>
    ${number(['policy-idle', 'idleDays'], 'Delete tokens unused for (days)', v.idleDays, [8, 3650], `Public and secret tokens not used for this many days (8 to 3650) are deleted, with a warning 7 days before. Empty: never.${planSays(plan.idleDays, 'day')}`, error)}
    ${number(['policy-grace', 'rollGraceMaxHours'], 'Longest grace after a roll (hours)', v.rollGraceMaxHours, [0, 24], `How long a rolled token's old string may keep working (0 to 24). Empty: up to 24 hours.${planSays(plan.rollGraceMaxHours, 'hour')}`, error)}
    <button type="submit">Save token policy</button>
  </form>`
}

/**
 * The token policy section of the settings page: what holds for every member, the form for
 * owners. Existing tokens keep working under a new rule; it applies when one is created,
 * changed or rolled (idle deletion applies to all).
 */
export function tokenPolicySection(v: {
  signedIn: SignedIn
  policy: PolicyShown
  values?: PolicyFormValues
  error?: FormError
}) {
  const owner = v.signedIn.role === 'owner'
  return html`<section aria-labelledby="token-policy-heading" class="card token-policy">
  <h2 id="token-policy-heading">Token policy</h2>
  ${alert(v.error)}
  <p class="hint">Rules every token of the account keeps, set by your owners and by your plan; where both set one, the stricter holds. Tokens made before a rule keep working, and a change may not loosen them further; the rule on unused tokens holds for every token, with a warning 7 days before.</p>
  <h3>In effect</h3>
  ${inEffect(v.policy.effective)}
  ${owner ? policyForm(v.signedIn, v.policy.plan, v.values ?? policyValues(v.policy.own), v.error) : html`<p class="hint">Owners of the account change its token policy.</p>`}
</section>`
}
