import { type Outcome, outcomes } from '../../usage/outcomes.js'
import type { LogMode } from '../../verification/log.js'
import { reasonOf } from '../../verification/reasons.js'
import type { StoredVerification } from '../../verification/verifications.js'
import { outcomeNames } from './chart.js'
import { time } from './forms.js'
import { type Html, html, when } from './html.js'
import { layout, type SignedIn } from './layout.js'

const hourMs = 3_600_000
/** The periods the Time filter offers, each ending now. */
export const requestTimes = {
  '1h': { text: 'Last hour', ms: hourMs },
  '24h': { text: 'Last 24 hours', ms: 24 * hourMs },
  '7d': { text: 'Last 7 days', ms: 7 * 24 * hourMs },
} as const
export type RequestTime = keyof typeof requestTimes
export const defaultRequestTime: RequestTime = '24h'

/** What the filter form asks for: '' is every token, every outcome. */
export interface RequestsFilter {
  token: string
  /** '', 'refused' (every outcome but valid), or one outcome. */
  outcome: '' | 'refused' | Outcome
  time: RequestTime
}

/** Where each source is, in a holder's words. */
const sourceNames: Record<string, string> = {
  retrieve: 'Retrieve',
  api: 'Token API',
  introspection: 'Introspection',
  verifier: 'Verifier',
}

/** A duration to the hundredth of a millisecond; under one, in microseconds. */
export const durationText = (us: number) =>
  us < 1000 ? `${us} µs` : `${(us / 1000).toFixed(2)} ms`

/** The page's address for a filter (defaults left out) and, for an older page, its cursor. */
export function requestsHref(filter: RequestsFilter, start?: string) {
  const q = new URLSearchParams()
  if (filter.token !== '') q.set('token', filter.token)
  if (filter.outcome !== '') q.set('outcome', filter.outcome)
  if (filter.time !== defaultRequestTime) q.set('time', filter.time)
  if (start !== undefined) q.set('start', start)
  const query = q.toString()
  return `/account/requests${query === '' ? '' : `?${query}`}`
}

const option = (value: string, text: string, chosen: string) =>
  html`<option value="${value}"${when(chosen === value, 'selected')}>${text}</option>`

/** A GET, so that a filter is an address (bookmarked, paged, no script). */
function filterForm(f: RequestsFilter, tokens: readonly { id: string; name: string }[]) {
  return html`<form method="get" action="/account/requests" class="search" role="search" aria-label="Requests">
  <div class="field">
    <label for="requests-token">Token</label>
    <select id="requests-token" name="token">
      ${option('', 'All tokens', f.token)}
      ${tokens.map((t) => option(t.id, t.name, f.token))}
    </select>
  </div>
  <div class="field">
    <label for="requests-outcome">Outcome</label>
    <select id="requests-outcome" name="outcome">
      ${option('', 'All', f.outcome)}
      ${option('refused', 'Refused', f.outcome)}
      ${outcomes.map((o) => option(o, outcomeNames[o], f.outcome))}
    </select>
  </div>
  <div class="field">
    <label for="requests-time">Time</label>
    <select id="requests-time" name="time">
      ${Object.entries(requestTimes).map(([value, t]) => option(value, t.text, f.time))}
    </select>
  </div>
  <button type="submit" class="secondary">Filter</button>
</form>`
}

const none = html`<span class="none">—</span>`

/** The token of a row: its page, a deleted one's id, or a dash for none (temporary tokens). */
function tokenCell(id: string, names: ReadonlyMap<string, string>) {
  if (id === '') return none
  const name = names.get(id)
  return name === undefined
    ? html`<span class="none">Deleted token</span> <code class="id">${id}</code>`
    : html`<a href="/account/tokens/${id}">${name}</a>`
}

function row(r: StoredVerification, names: ReadonlyMap<string, string>) {
  const outcome = r.outcome as Outcome
  const refused = outcome !== 'valid'
  return html`<tr>
  <td data-label="Time">${time(new Date(r.at).toISOString(), 'second')}</td>
  <td data-label="Token">${tokenCell(r.tokenId, names)}</td>
  <td data-label="Source">${sourceNames[r.source] ?? r.source}</td>
  <td data-label="Outcome"><span class="outcome${refused ? ' refused' : ''}"><span class="swatch outcome-${outcome}" aria-hidden="true"></span>${outcomeNames[outcome] ?? r.outcome}</span></td>
  <td data-label="Why">${refused ? reasonOf(r.outcome, r.limit) : none}</td>
  <td data-label="Client">${r.ip === null ? none : html`<code>${r.ip}</code>`}</td>
  <td data-label="Origin">${r.origin ?? none}</td>
  <td data-label="Duration" class="number">${r.durationUs === null ? none : durationText(r.durationUs)}</td>
  <td data-label="Request id">${r.requestId === null ? none : html`<code>${r.requestId}</code>`}</td>
</tr>`
}

/** What the operator's VERIFICATION_LOG and a full buffer leave out, said above the list. */
function warnings(mode: LogMode, dropped: number): Html {
  const off = html`<p class="warning">The request log is off (VERIFICATION_LOG=off).</p>`
  const refusedOnly = html`<p class="warning">Only refused requests are kept (VERIFICATION_LOG=refused): valid ones are counted on the Usage page, not listed here.</p>`
  const lost = html`<p class="warning">Some requests of this period were not recorded (the log's buffer was full).</p>`
  return html`${mode === 'off' ? off : mode === 'refused' ? refusedOnly : ''}${dropped > 0 ? lost : ''}`
}

export function requestsView(v: {
  signedIn: SignedIn
  filter: RequestsFilter
  /** The account's tokens the Token filter offers, named. */
  tokens: readonly { id: string; name: string }[]
  rows: readonly StoredVerification[]
  /** The tokens the rows name that still exist: id → name. */
  names: ReadonlyMap<string, string>
  /** The cursor of the next (older) page, when there is one. */
  next?: string
  /** A page other than the newest. */
  older: boolean
  mode: LogMode
  dropped: number
  retentionDays: number
}) {
  const table =
    v.rows.length === 0
      ? html`<p class="card none">No requests in this period.</p>`
      : html`<table class="requests">
<caption class="visually-hidden">Requests, newest first</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Token</th><th scope="col">Source</th><th scope="col">Outcome</th><th scope="col">Why</th><th scope="col">Client</th><th scope="col">Origin</th><th scope="col" class="number">Duration</th><th scope="col">Request id</th></tr></thead>
<tbody>
${v.rows.map((r) => row(r, v.names))}
</tbody>
</table>`
  const pager =
    v.next === undefined && !v.older
      ? ''
      : html`<nav class="pager" aria-label="Pages">
  ${v.older ? html`<a href="${requestsHref(v.filter)}">Newest requests</a>` : ''}
  ${v.next === undefined ? '' : html`<a href="${requestsHref(v.filter, v.next)}">Older</a>`}
</nav>`
  return layout(
    { title: 'Requests', signedIn: v.signedIn, section: 'requests' },
    html`<p class="lead">Each verification of your tokens, newest first: when, which token, where (Tessera’s retrieve, the token API, introspection, or the verifier in your own services), what it came to and why, from which client and page, and how long Tessera took. Times are UTC. Requests are kept for ${v.retentionDays} days.</p>
${filterForm(v.filter, v.tokens)}
${warnings(v.mode, v.dropped)}
${table}
${pager}`,
  )
}
