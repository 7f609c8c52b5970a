import { html } from './html.js'
import type { Period } from './periods.js'
import { count } from './usage.js'

/** Verifications a named limit refused over the period (the usage's split of rate_limited). */
export interface LimitedUse {
  name: string
  count: number
}

/**
 * The Usage page's "Refused by rate limit" card: which of the account's limits (its own, its
 * plan's, `requests`, a token's) refused how many, the most first. Nothing when none refused:
 * most accounts never meet a limit, and an empty card would only say so at length.
 */
export function limitedCard(limited: readonly LimitedUse[], period: Period) {
  if (limited.length === 0) return ''
  return html`<section aria-labelledby="limited-heading" class="card">
  <h2 id="limited-heading">Refused by rate limit</h2>
  <table class="limited">
  <caption class="visually-hidden">Verifications each rate limit refused, ${period.label}</caption>
  <thead><tr><th scope="col">Limit</th><th scope="col">Refused</th></tr></thead>
  <tbody>
  ${limited.map((l) => html`<tr><th scope="row"><code>${l.name}</code></th><td class="number" data-label="Refused">${count(l.count)}</td></tr>`)}
  </tbody>
</table>
</section>`
}
