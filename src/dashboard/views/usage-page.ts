import { outcomes } from '../../usage/outcomes.js'
import { outcomeNames, periodLinks, usageChart } from './chart.js'
import { accountCreditsCard, type CreditsShown } from './credits.js'
import { html } from './html.js'
import { type LatencyShown, latencyChart } from './latency.js'
import { layout, type SignedIn } from './layout.js'
import { type Bucket, type Period, sum } from './periods.js'
import { count } from './usage.js'
import { type LimitedUse, limitedCard } from './usage-limited.js'

/** A token's verifications over the period, by outcome (ctx.usage.byToken). */
export interface TokenUse {
  /** The token's id; '' for temporary tokens, which carry none. */
  id: string
  /** Its note (or `Default public token`, or its id); undefined when it no longer exists. */
  name?: string
  counts: number[]
}

const refusedOf = (t: TokenUse) => sum(t.counts) - (t.counts[0] ?? 0)

const tokenCell = (t: TokenUse) =>
  t.id === ''
    ? html`Temporary tokens`
    : t.name === undefined
      ? html`<span class="none">Deleted token</span> <code class="id">${t.id}</code>`
      : html`<a href="/account/tokens/${t.id}">${t.name}</a>`

/** The refusals of a token, the most frequent first: `Revoked 30, Expired 2`. */
const reasons = (t: TokenUse) =>
  outcomes
    .map((o, i) => ({ o, n: i === 0 ? 0 : (t.counts[i] ?? 0) }))
    .filter((r) => r.n > 0)
    .sort((a, b) => b.n - a.n)
    .map((r) => `${outcomeNames[r.o]} ${count(r.n)}`)
    .join(', ')

function mostUsed(tokens: readonly TokenUse[], period: Period) {
  if (tokens.length === 0)
    return html`<p class="none">No token was used in the ${period.label}.</p>`
  return html`<table class="top-tokens">
  <caption class="visually-hidden">The most used tokens, ${period.label}</caption>
  <thead><tr><th scope="col">Token</th><th scope="col">Total</th><th scope="col">Valid</th><th scope="col">Refused</th></tr></thead>
  <tbody>
  ${tokens.map((t) => html`<tr><th scope="row">${tokenCell(t)}</th><td class="number" data-label="Total">${count(sum(t.counts))}</td><td class="number" data-label="Valid">${count(t.counts[0] ?? 0)}</td><td class="number" data-label="Refused">${count(refusedOf(t))}</td></tr>`)}
  </tbody>
</table>`
}

function mostRefused(tokens: readonly TokenUse[], period: Period) {
  if (tokens.length === 0)
    return html`<p class="none">No token was refused in the ${period.label}.</p>`
  return html`<table class="top-tokens">
  <caption class="visually-hidden">The most refused tokens, ${period.label}</caption>
  <thead><tr><th scope="col">Token</th><th scope="col">Refused</th><th scope="col">Why</th></tr></thead>
  <tbody>
  ${tokens.map((t) => html`<tr><th scope="row">${tokenCell(t)}</th><td class="number" data-label="Refused">${count(refusedOf(t))}</td><td data-label="Why">${reasons(t)}</td></tr>`)}
  </tbody>
</table>`
}

/** How many tokens each list shows. */
export const topTokens = 10

/** The tokens that were verified most, and refused most, over the period (the lists' order). */
export function rankTokens(tokens: readonly TokenUse[]) {
  const byTotal = [...tokens].filter((t) => sum(t.counts) > 0)
  byTotal.sort((a, b) => sum(b.counts) - sum(a.counts) || a.id.localeCompare(b.id))
  const byRefused = byTotal.filter((t) => refusedOf(t) > 0)
  byRefused.sort((a, b) => refusedOf(b) - refusedOf(a) || a.id.localeCompare(b.id))
  return { used: byTotal.slice(0, topTokens), refused: byRefused.slice(0, topTokens) }
}

/** Latency beside the outcome chart, over the same period and buckets. */
const latencyCard = (period: Period, latency: LatencyShown) =>
  html`<section aria-labelledby="latency-heading" class="card">
  <div class="card-head">
    <h2 id="latency-heading">Latency</h2>
  </div>
  ${latencyChart({ period, ...latency })}
  <p class="actions download"><a href="/account/requests">See each request</a></p>
</section>`

/** The Usage page: the account's verifications by outcome, its busiest tokens, its credits. */
export function usagePageView(v: {
  signedIn: SignedIn
  period: Period
  buckets: readonly Bucket[]
  used: readonly TokenUse[]
  refused: readonly TokenUse[]
  /** What each named limit refused, the most first (none: no card). */
  limited?: readonly LimitedUse[]
  /** The account's credits: shown to every member, changed by the operator only. */
  credits: CreditsShown | undefined
  /** p50 and p99 per bucket of the period, from the request log (none: no card). */
  latency?: LatencyShown
}) {
  const csv = `/account/usage.csv?period=${v.period.name}`
  return layout(
    { title: 'Usage', signedIn: v.signedIn, section: 'usage' },
    html`<p class="lead">Every verification of your tokens, wherever it happened (the API, introspection, the verifier in your own services), counted by outcome. Times are UTC; counts appear within a minute or two.</p>
<div class="charts">
<section aria-labelledby="verifications-heading" class="card">
  <div class="card-head">
    <h2 id="verifications-heading">Verifications</h2>
    ${periodLinks('/account/usage', v.period)}
  </div>
  ${usageChart(v.period, v.buckets)}
  <p class="actions download"><a href="${csv}" download>Download CSV</a></p>
</section>
${v.latency === undefined ? '' : latencyCard(v.period, v.latency)}
</div>
<div class="columns">
<section aria-labelledby="used-heading" class="card">
  <h2 id="used-heading">Most used tokens</h2>
  ${mostUsed(v.used, v.period)}
</section>
<section aria-labelledby="refused-heading" class="card">
  <h2 id="refused-heading">Most refused tokens</h2>
  ${mostRefused(v.refused, v.period)}
</section>
</div>
${limitedCard(v.limited ?? [], v.period)}
${accountCreditsCard(v.credits)}`,
  )
}
