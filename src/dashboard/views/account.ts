import type { AccountRecord } from '../../accounts/service.js'
import type { SignInMethod } from '../../audit/events.js'
import type { NamedLimit } from '../../ratelimit/named.js'
import type { Scope } from '../../scopes/catalog.js'
import { passkeyScripts } from './auth.js'
import { factorsSection } from './factors.js'
import { alert, csrf, type FormError, notice, time } from './forms.js'
import { html } from './html.js'
import { type Frame, layout } from './layout.js'
import { type NoticeShown, noticesSection } from './notices.js'
import { type PolicyFormValues, type PolicyShown, tokenPolicySection } from './token-policy.js'

type SignedIn = NonNullable<Frame['signedIn']>

export function scopesView(v: { signedIn: SignedIn; scopes: readonly Scope[] }) {
  return layout(
    { title: 'Scopes', signedIn: v.signedIn, section: 'scopes' },
    html`<p class="lead">The scopes your account may give its tokens. A token holding any secret scope is a secret token (sk).</p>
<table class="scopes-table">
<caption class="visually-hidden">Scopes available to your account</caption>
<thead><tr><th scope="col">Scope</th><th scope="col">Description</th><th scope="col">Kind</th></tr></thead>
<tbody>
${v.scopes.map(
  (s) =>
    html`<tr><th scope="row"><code>${s.id}</code></th><td>${s.description}</td><td><span class="usage usage-${s.public ? 'pk' : 'sk'}">${s.public ? 'public' : 'secret'}</span></td></tr>`,
)}
</tbody>
</table>`,
  )
}

const units: [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1000, 'second'],
]

/** A limit's window in words: `1 minute`, `90 seconds`, `1.5 seconds`. */
export function windowText(ms: number): string {
  const [size, unit] = units.find(([size]) => ms % size === 0) ?? [1000, 'second']
  const n = ms / size
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}

/** The named rate limits in force (ctx.accounts.ratelimits' `effective`), read-only. */
export const ratelimitsSection = (limits: readonly NamedLimit[]) =>
  html`<section aria-labelledby="ratelimits-heading" class="card">
  <h2 id="ratelimits-heading">Rate limits</h2>
  <table class="ratelimits">
  <caption class="visually-hidden">Rate limits in effect on your account</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Limit</th><th scope="col">Window</th></tr></thead>
  <tbody>
  ${limits.map(
    (l) =>
      html`<tr><th scope="row"><code>${l.name}</code></th><td>${l.limit.toLocaleString('en-US')}</td><td>${windowText(l.duration)}</td></tr>`,
  )}
  </tbody>
  </table>
  <p class="hint">Every request with your tokens counts against each limit; one past any of them is refused (429) until its window ends. Your plan and your operator set them.</p>
</section>`

/** Where machines get tokens without a stored secret: the trust policies page. */
const machinesSection = (count: number) =>
  html`<section aria-labelledby="machines-heading" class="card">
  <h2 id="machines-heading">Machines</h2>
  <p>CI jobs and cloud workloads can exchange their signed identity for a temporary token, with no secret stored: <a href="/account/trust-policies">Trust policies</a> say which may, with what scopes.</p>
  <p class="hint">${count === 0 ? 'None yet.' : `${count} polic${count === 1 ? 'y' : 'ies'} in effect.`}</p>
</section>`

const methodText = {
  password: 'a password',
  passkey: 'a passkey',
  link: 'a portal link',
  sso: 'single sign-on',
}

const passwordSection = (
  v: Parameters<typeof settingsView>[0],
) => html`<section aria-labelledby="password-heading" class="card">
  <h2 id="password-heading">Change password</h2>
  ${alert(v.error)}
  <form method="post" action="/account/settings/password" novalidate>
    ${csrf(v.signedIn.csrf)}
    <input type="hidden" name="username" autocomplete="username" value="${v.signedIn.login}">
    <label for="current-password">Current password</label>
    <input id="current-password" name="current" type="password" autocomplete="current-password" required>
    <label for="new-password">New password</label>
    <input id="new-password" name="password" type="password" autocomplete="new-password" minlength="12" maxlength="256" required aria-describedby="password-rule">
    <p class="hint" id="password-rule">At least 12 characters. Your other sessions end when it changes.</p>
    <button type="submit">Change password</button>
  </form>
</section>`

export function settingsView(v: {
  signedIn: SignedIn
  account: AccountRecord
  scopeCount: number
  /** The person signed in: whether they have a password here, and how they signed in. */
  person: { hasPassword: boolean; method: SignInMethod; email?: string }
  factors: Omit<Parameters<typeof factorsSection>[0], 'signedIn'>
  /** What needs attention soon (ctx.hygiene.upcoming), and the service clock. */
  notices: readonly NoticeShown[]
  now: number
  /** The named rate limits in force on the account. */
  ratelimits: readonly NamedLimit[]
  /** The token policy, and its form as typed with its refusal. */
  policy: PolicyShown
  policyValues?: PolicyFormValues
  policyError?: FormError
  /** How many trust policies the account has (workload identity exchange). */
  trustPolicies: number
  error?: FormError
  notice?: string
}) {
  const { account } = v
  return layout(
    { title: 'Settings', signedIn: v.signedIn, section: 'settings', scripts: passkeyScripts },
    html`${notice(v.notice)}${noticesSection({ signedIn: v.signedIn, notices: v.notices, now: v.now, back: '/account/settings' })}
<section aria-labelledby="account-heading" class="card">
  <h2 id="account-heading">Account</h2>
  <dl class="facts">
    <dt>Username</dt><dd>${account.username}</dd>
    <dt>Plan</dt><dd>${account.plan}</dd>
    <dt>Features</dt><dd>${account.features.length === 0 ? 'none' : account.features.join(', ')}</dd>
    <dt>Scopes</dt><dd><a href="/account/scopes">${v.scopeCount} available</a></dd>
    <dt>Created</dt><dd>${time(account.created)}</dd>
  </dl>
  <p class="hint">Your plan and features are set by your operator.</p>
</section>
${ratelimitsSection(v.ratelimits)}
${tokenPolicySection({ signedIn: v.signedIn, policy: v.policy, values: v.policyValues, error: v.policyError })}
${machinesSection(v.trustPolicies)}
<section aria-labelledby="you-heading" class="card">
  <h2 id="you-heading">You</h2>
  <dl class="facts">
    <dt>Username</dt><dd>${v.signedIn.login}</dd>
    <dt>Email</dt><dd>${v.person.email ?? html`<span class="none">none</span>`}</dd>
    <dt>Role</dt><dd>${v.signedIn.role}</dd>
    <dt>Signed in with</dt><dd>${methodText[v.person.method]}</dd>
  </dl>
</section>
${v.person.hasPassword ? passwordSection(v) : ''}
${factorsSection({ signedIn: v.signedIn, ...v.factors })}<section aria-labelledby="sessions-heading" class="card">
  <h2 id="sessions-heading">Sessions</h2>
  <p>Signed in on a computer you no longer use? End every session of yours, this one included, in every account.</p>
  <form method="post" action="/account/sign-out-everywhere" novalidate>
    ${csrf(v.signedIn.csrf)}
    <button type="submit" class="danger">Sign out everywhere</button>
  </form>
</section>`,
  )
}
