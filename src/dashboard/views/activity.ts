import type { AuditEvent } from '../../audit/events.js'
import type { TokenView } from '../../tokens/service.js'
import { actorText, particulars, targetText, whatHappened } from './events.js'
import { time } from './forms.js'
import { html } from './html.js'
import { layout, type SignedIn } from './layout.js'

export function activityView(v: {
  signedIn: SignedIn
  events: AuditEvent[]
  /** The tokens the events name that still exist. */
  tokens: ReadonlyMap<string, TokenView>
  /** The id of the page's last event when older ones remain. */
  next?: string
  /** A page other than the newest. */
  older: boolean
  retentionDays: number
}) {
  const row = (e: AuditEvent) => {
    const more = particulars(e)
    return html`<tr>
  <td data-label="Time">${time(e.at, 'second')}</td>
  <th scope="row" data-label="Event"><span class="event event-${e.action.split('.')[0]}${e.action === 'signin.failed' ? ' event-failed' : ''}">${whatHappened(e)}</span>${more === '' ? '' : html` <span class="particulars">${more}</span>`}</th>
  <td data-label="By">${actorText(e)}</td>
  <td data-label="Target">${targetText(e, v.tokens)}</td>
  <td data-label="Address">${e.address === undefined ? html`<span class="none">none</span>` : html`<code>${e.address}</code>`}</td>
  <td data-label="Request id">${e.requestId === undefined ? html`<span class="none">none</span>` : html`<code>${e.requestId}</code>`}</td>
</tr>`
  }
  const pager =
    v.next === undefined && !v.older
      ? ''
      : html`<nav class="pager" aria-label="Pages">
  ${v.older ? html`<a href="/account/activity">Newest events</a>` : ''}
  ${v.next === undefined ? '' : html`<a href="/account/activity?before=${v.next}">Next page</a>`}
</nav>`
  const table =
    v.events.length === 0
      ? html`<p class="card none">${v.older ? 'No older events.' : 'No events yet.'}</p>`
      : html`<table class="activity">
<caption class="visually-hidden">Events of your account, newest first</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">By</th><th scope="col">Target</th><th scope="col">Address</th><th scope="col">Request id</th></tr></thead>
<tbody>
${v.events.map(row)}
</tbody>
</table>`
  return layout(
    { title: 'Activity', signedIn: v.signedIn, section: 'activity' },
    html`<p class="lead">What was done to your account and its tokens, newest first: by whom, from which address, and the request id to quote when you ask your operator about it. Events are kept for ${v.retentionDays} days; how often each token is used is on its own page.</p>
${table}
${pager}`,
  )
}
