import { alert, csrf, type FormError, time } from './forms.js'
import { type Html, html, when } from './html.js'
import type { SignedIn } from './layout.js'
import { count } from './usage.js'

/** A balance of credits as the credit service tells it (ctx.credits.get). */
export interface CreditsShown {
  remaining: number
  /** What the period began with (set or refilled). */
  balance: number
  refill: { interval: 'daily' | 'monthly'; amount: number; day?: number } | null
  period: string
  nextRefill?: string
  /** The account's plan gave them. */
  plan?: true
}

/** What the credits form holds: as typed, or as the balance stands. */
export interface CreditFormValues {
  remaining: string
  refill: string
  amount: string
  day: string
}

export const creditValues = (c: CreditsShown | undefined): CreditFormValues => ({
  remaining: c === undefined ? '' : String(c.remaining),
  refill: c?.refill?.interval ?? 'none',
  amount: c?.refill == null ? '' : String(c.refill.amount),
  day: String(c?.refill?.day ?? 1),
})

const refillText = (c: CreditsShown) => {
  const r = c.refill
  if (r === null) return html`<span class="none">no refill</span>`
  const next = c.nextRefill === undefined ? '' : html`; next ${time(c.nextRefill)}`
  const when = r.interval === 'daily' ? 'every day' : `every month on day ${r.day ?? 1}`
  return html`set to ${count(r.amount)} ${when} at 00:00 UTC${next}`
}

const facts = (c: CreditsShown) => html`<dl class="facts">
  <dt>Remaining</dt><dd><strong>${count(c.remaining)}</strong> of ${count(c.balance)}</dd>
  <dt>Refill</dt><dd>${refillText(c)}</dd>
  <dt>Since</dt><dd>${time(c.period)}${c.plan ? ' (from your plan)' : ''}</dd>
</dl>`

const option = (value: string, text: string, chosen: string) =>
  html`<option value="${value}"${when(chosen === value, 'selected')}>${text}</option>`

/** The owner's form (under the card's h3): set the balance and its refill, or remove the limit. */
function creditsForm(action: string, v: CreditFormValues, signedIn: SignedIn, has: boolean) {
  return html`<form method="post" action="${action}" novalidate>
  ${csrf(signedIn.csrf)}
  <h4>${has ? 'Change credits' : 'Set a credit limit'}</h4>
  <label for="credits-remaining">Credits remaining</label>
  <input id="credits-remaining" name="remaining" type="number" inputmode="numeric" min="0" step="1" value="${v.remaining}">
  <label for="credits-refill">Refill</label>
  <select id="credits-refill" name="refill" aria-describedby="credits-refill-hint">
    ${option('none', 'No refill', v.refill)}
    ${option('daily', 'Daily', v.refill)}
    ${option('monthly', 'Monthly', v.refill)}
  </select>
  <p class="hint" id="credits-refill-hint">A refill sets the remaining credits to the refill amount (unspent credits do not carry over), at 00:00 UTC: every day, or every month on the refill day.</p>
  <label for="credits-amount">Refill amount</label>
  <input id="credits-amount" name="amount" type="number" inputmode="numeric" min="1" step="1" value="${v.amount}">
  <label for="credits-day">Refill day</label>
  <input id="credits-day" name="day" type="number" inputmode="numeric" min="1" max="28" step="1" value="${v.day}" aria-describedby="credits-day-hint">
  <p class="hint" id="credits-day-hint">Day of the month of a monthly refill, 1 to 28.</p>
  <button type="submit">Save credits</button>
</form>
${
  has
    ? html`<form method="post" action="${action}/remove" class="danger-zone" novalidate>
  ${csrf(signedIn.csrf)}
  <button type="submit" class="secondary">Remove credit limit</button>
</form>`
    : ''
}`
}

/** The card: a section of its page (h2), or of a token's "Limits and credits" (h3). */
const card = (
  level: 'h2' | 'h3',
  about: string,
  c: CreditsShown | undefined,
  rest: Html,
  error?: FormError,
) =>
  html`<section aria-labelledby="credits-heading" class="card credits">
  ${level === 'h2' ? html`<h2 id="credits-heading">Credits</h2>` : html`<h3 id="credits-heading">Credits</h3>`}
  ${alert(error)}
  <p class="hint">${about} The API’s own token check never spends credits.</p>
  ${c === undefined ? html`<p><strong>No credit limit</strong>: verifications are not metered.</p>` : facts(c)}
  ${rest}
</section>`

/**
 * Credits of the account, shared by all its tokens: the operator's quota (often its plan's,
 * used for billing), so every member sees them and none changes them, owners included.
 */
export const accountCreditsCard = (credits: CreditsShown | undefined) =>
  card(
    'h2',
    'Credits of the account are shared by all its tokens: each verification that costs credits takes them from here (and from the token’s own, when it has some).',
    credits,
    html`<p class="hint">Your provider sets the account’s credits.</p>`,
  )

/** Credits of one token: what remains and how it refills, for every member; owners change them. */
export function tokenCreditsCard(v: {
  signedIn: SignedIn
  /** Where the form posts: `/account/tokens/<id>/credits`. */
  action: string
  credits: CreditsShown | undefined
  values?: CreditFormValues
  error?: FormError
}) {
  const c = v.credits
  return card(
    'h3',
    'Credits of this token alone: each verification that costs credits takes them from here (and from the account’s, when it has some).',
    c,
    v.signedIn.role === 'owner'
      ? creditsForm(v.action, v.values ?? creditValues(c), v.signedIn, c !== undefined)
      : html`<p class="hint">Owners of the account change this token’s credits.</p>`,
    v.error,
  )
}
