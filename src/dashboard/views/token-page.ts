import type { Scope } from '../../scopes/catalog.js'
import type { TokenPolicy } from '../../token-policy.js'
import type { LeakEvidence } from '../../tokens/leaks.js'
import type { TokenView } from '../../tokens/service.js'
import { windowText } from './account.js'
import { periodLinks, usageChart } from './chart.js'
import { type CreditFormValues, type CreditsShown, tokenCreditsCard } from './credits.js'
import { dayOf, fromNow } from './expiry.js'
import { alert, csrf, type FormError, notice, time } from './forms.js'
import { html } from './html.js'
import { layout, type SignedIn } from './layout.js'
import { type NoticeShown, noticesSection } from './notices.js'
import type { Bucket, Period } from './periods.js'
import { type FamilyShown, familySection } from './token-family.js'
import { fields, type TokenFormValues } from './token-form.js'
import { tokenString } from './token-string.js'
import { leakReport } from './tokens.js'
import { lastUsedText } from './usage.js'

/**
 * A leaked token kept (a pk reported by anyone, a restricted pk, or any token under
 * LEAKED_TOKENS=flag): the holder is told where it was found, and what to do.
 */
const leakBanner = (e: LeakEvidence, usage: 'pk' | 'sk') =>
  html`<div role="alert" class="error leak"><p><strong>This token was reported leaked</strong> (${time(e.at)}): it was found where others can see it. Roll it below and give your applications the new string.</p>
<p>It was ${leakReport(e)}.</p>${
    usage === 'pk'
      ? html`
<p>A public token is made to be seen in web pages, so this may be where you put it: restrict it to your sites with Allowed URLs, or roll it if it should not be there. An anonymous report never revokes a public token.</p>`
      : ''
  }</div>`

/** A rolled token in its grace period: the token that replaced it is the one to change. */
const retiringNotice = (retiresAt: number) =>
  html`<p role="status" class="notice">This token was rolled: it works until ${time(new Date(retiresAt).toISOString())}, then ends. Roll or change the token that replaced it.</p>`

export function tokenPageView(v: {
  signedIn: SignedIn
  /** When, where and by whom it was reported leaked, if it was and was kept. */
  leak?: LeakEvidence
  /** A rolled token's end (epoch ms): it cannot be rolled again. */
  retiresAt?: number
  token: TokenView
  scopes: readonly Scope[]
  values: TokenFormValues
  /** When it was last used (ctx.usage.lastUsed). */
  lastUsed?: string
  /** Its verifications by outcome over the period chosen. */
  period: Period
  buckets: readonly Bucket[]
  now: number
  /** The token's own credits, and the credits form as typed, with its error. */
  credits: CreditsShown | undefined
  creditValues?: CreditFormValues
  creditError?: FormError
  error?: FormError
  notice?: string
  /** What needs attention soon about this token, with Extend's end where allowed. */
  notices?: readonly NoticeShown[]
  /** The account's token policy (what holds), told beside the fields and the roll it concerns. */
  policy?: TokenPolicy
  /** Its parent, if it is a child token, and its children. */
  family?: FamilyShown
}) {
  const t = v.token
  return layout(
    { title: t.note !== '' ? t.note : t.id, signedIn: v.signedIn, section: 'tokens' },
    html`${v.leak === undefined ? '' : leakBanner(v.leak, t.usage)}${v.retiresAt === undefined ? '' : retiringNotice(v.retiresAt)}${notice(v.notice)}${alert(v.error)}${noticesSection({ signedIn: v.signedIn, notices: v.notices ?? [], now: v.now, back: `/account/tokens/${t.id}`, own: true })}
${overview(v)}
${v.family === undefined ? '' : familySection(v.family, { id: t.id, username: v.signedIn.username }, v.now)}
<section aria-labelledby="settings-heading" class="part">
  <h2 id="settings-heading">Settings</h2>
  ${v.signedIn.role === 'viewer' ? readOnly(t) : editable(v)}
</section>
<section aria-labelledby="limits-heading" class="part">
  <h2 id="limits-heading">Limits and credits</h2>
  ${ownLimits(t.ratelimits ?? [])}
  ${tokenCreditsCard({ signedIn: v.signedIn, action: `/account/tokens/${t.id}/credits`, credits: v.credits, values: v.creditValues, error: v.creditError })}
</section>
${v.signedIn.role === 'viewer' ? '' : dangerZone(v)}`,
  )
}

type TokenPage = Parameters<typeof tokenPageView>[0]

/** What the token is, its string, and how it has been used. */
const overview = (v: TokenPage) => {
  const t = v.token
  return html`<section aria-labelledby="overview-heading" class="part overview">
<h2 id="overview-heading">Overview</h2>
<div class="card">
<dl class="facts">
  <dt>Id</dt><dd><code>${t.id}</code></dd>
  <dt>Usage</dt><dd>${t.usage === 'pk' ? 'public (pk)' : 'secret (sk)'}${t.default ? ', the default token' : ''}</dd>
  <dt>Created</dt><dd>${time(t.created)}</dd>
  <dt>Modified</dt><dd>${time(t.modified)}</dd>
  <dt>Last used</dt><dd>${lastUsedText(v.lastUsed, t.created, v.now)}</dd>
  <dt>Expires</dt><dd>${endOfLife(t, v.now)}</dd>
  <dt>Token</dt><dd>${t.token === undefined ? 'A secret token is shown only once, when it is created.' : tokenString('token-string', t.token)}</dd>
</dl>
<p class="visually-hidden" id="copy-status" role="status"></p>
</div>
<section aria-labelledby="usage-heading" class="card">
  <div class="card-head">
    <h3 id="usage-heading">Verifications</h3>
    ${periodLinks(`/account/tokens/${t.id}`, v.period)}
  </div>
  ${usageChart(v.period, v.buckets)}
</section>
</section>`
}

/** Its end of life, and how far off; or that it has none. */
const endOfLife = (t: TokenView, now: number) => {
  if (t.expiresAt === undefined) return html`<span class="none">never</span>`
  if (Date.parse(t.expiresAt) <= now) return html`${dayOf(t.expiresAt, now)} (expired)`
  return html`${dayOf(t.expiresAt, now)} (${fromNow(t.expiresAt, now)})`
}

/**
 * The token's own named rate limits (the API's `ratelimits`), read-only: the form does not
 * change them, so a save keeps them.
 */
const ownLimits = (limits: NonNullable<TokenView['ratelimits']>) =>
  limits.length === 0
    ? html`<p class="hint">No rate limits of its own: your account’s apply (Settings). A token’s own limits are set through the API (<code>ratelimits</code>).</p>`
    : html`<section aria-labelledby="token-ratelimits-heading" class="card">
  <h3 id="token-ratelimits-heading">Rate limits</h3>
  <table class="ratelimits">
  <caption class="visually-hidden">Rate limits of this token</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Limit</th><th scope="col">Window</th></tr></thead>
  <tbody>
  ${limits.map(
    (l) =>
      html`<tr><th scope="row"><code>${l.name}</code></th><td>${l.limit.toLocaleString('en-US')}${l.cost === undefined || l.cost === 1 ? '' : ` (a request counts ${l.cost})`}</td><td>${windowText(l.duration)}</td></tr>`,
  )}
  </tbody>
  </table>
  <p class="hint">This token’s own limits, on top of your account’s (Settings): a request past any of them is refused (429) until its window ends. They are set through the API (<code>ratelimits</code>).</p>
</section>`

/** A viewer's view of a token's settings: text, no form. */
const readOnly = (t: TokenView) => html`<div class="card">
  <dl class="facts">
    <dt>Note</dt><dd>${t.note === '' ? html`<span class="none">none</span>` : t.note}</dd>
    <dt>Scopes</dt><dd>${t.scopes.length === 0 ? html`<span class="none">none</span>` : t.scopes.join(', ')}</dd>
    <dt>Allowed URLs</dt><dd>${t.allowedUrls === undefined || t.allowedUrls.length === 0 ? html`<span class="none">anywhere</span>` : t.allowedUrls.join(', ')}</dd>
    <dt>Allowed IP addresses</dt><dd>${t.allowedIps === undefined ? html`<span class="none">any</span>` : t.allowedIps.join(', ')}</dd>
  </dl>
  <p class="hint">You are a viewer in this account: developers and owners change tokens.</p>
</div>`

/** Roll: when the old string ends, within the grace the token policy allows. */
const rollForm = (v: TokenPage) => {
  const grace = v.policy?.rollGraceMaxHours
  const longest = grace ?? 24
  return html`<form method="post" action="/account/tokens/${v.token.id}/roll" novalidate>
  ${csrf(v.signedIn.csrf)}
  <h3 id="roll">Roll this token</h3>
  <p class="hint">A new token takes its place: a new string, the same note, scopes, allowed URLs and end of life. Give your applications the new string; the old one stops working when you choose.</p>
  <label for="roll-when">The old token stops working</label>
  <select id="roll-when" name="when"${grace === undefined ? '' : html` aria-describedby="roll-policy"`}>
    <option value="now">now</option>
    ${longest >= 1 ? html`<option value="1h">in 1 hour</option>` : ''}
    ${longest >= 24 ? html`<option value="24h">in 24 hours</option>` : ''}
  </select>
  ${grace === undefined ? '' : html`<p class="hint" id="roll-policy">Your account’s token policy allows at most ${grace} hour${grace === 1 ? '' : 's'} of grace after a roll.</p>`}
  <button type="submit" class="secondary">Roll token</button>
</form>`
}

const editable = (
  v: TokenPage,
) => html`<form method="post" action="/account/tokens/${v.token.id}" class="card" novalidate>
  ${csrf(v.signedIn.csrf)}
  ${fields(v.scopes, v.values, v.policy, { error: v.error })}
  <button type="submit">Save changes</button>
</form>`

/** What ends the token's string: a roll (unless it was rolled already) and deletion. */
const dangerZone = (v: TokenPage) => {
  const t = v.token
  return html`<section aria-labelledby="danger-heading" class="part">
  <h2 id="danger-heading">Danger zone</h2>
  <div class="card danger-card">
  ${v.retiresAt === undefined ? rollForm(v) : html`<p class="hint">This token was rolled already: roll the token that replaced it.</p>`}
  ${
    t.default
      ? html`<p class="hint">The default token cannot be deleted.</p>`
      : html`<form method="get" action="/account/tokens/${t.id}/delete" class="delete">
    <h3 id="delete-heading">Delete this token</h3>
    <p class="hint">Every request that uses it is refused at once. This cannot be undone.</p>
    <button type="submit" class="danger">Delete token</button>
  </form>`
  }
  </div>
</section>`
}
