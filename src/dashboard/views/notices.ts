import type { Notice } from '../../hygiene/hygiene.js'
import { dayOf, fromNow } from './expiry.js'
import { csrf } from './forms.js'
import { html } from './html.js'
import type { SignedIn } from './layout.js'
import { tokenName } from './token-name.js'

/**
 * What happens to a token soon (ctx.hygiene.upcoming: it expires, retires or is deleted unused),
 * as a page shows it: with the end Extend would set, where the policy allows one.
 */
export interface NoticeShown extends Notice {
  extendTo?: string
}

/** More than this many notices: the rest are counted, not listed. */
const shownAtMost = 25

const what = (n: Notice, now: number) => {
  const when = html`${dayOf(n.at, now)} (${fromNow(n.at, now)})`
  if (n.kind === 'expiring') {
    return html`expires ${when}: from then on every request with it is refused.`
  }
  if (n.kind === 'retiring') {
    return html`was rolled: its old string stops working ${when}. Make sure your applications use the new one.`
  }
  return html`has not been used for a long time: it will be deleted ${when}. Use it to keep it, or delete it now.`
}

/** Extend, Roll and Delete of a notice, for the roles that change tokens. */
function actions(n: NoticeShown, i: number, signedIn: SignedIn, back: string, now: number) {
  if (signedIn.role === 'viewer') return ''
  const name = tokenName(n.token)
  const id = n.token.id
  const extend =
    n.extendTo === undefined
      ? ''
      : html`<form method="post" action="/account/tokens/${id}/extend" class="inline" novalidate>
      ${csrf(signedIn.csrf)}
      <input type="hidden" name="back" value="${back}">
      <button type="submit" class="secondary" aria-label="Extend ${name}" aria-describedby="extend-${i}">Extend</button>
      <span class="hint" id="extend-${i}">to ${dayOf(n.extendTo, now)}</span>
    </form>`
  // A rolled token is not rolled again: its successor is.
  const roll =
    n.kind === 'idle'
      ? html`<a class="button secondary" href="/account/tokens/${id}#roll" aria-label="Roll ${name}">Roll</a>`
      : ''
  return html`<div class="notice-actions">${extend}${roll}<a class="button secondary" href="/account/tokens/${id}/delete" aria-label="Delete ${name}">Delete</a></div>`
}

/**
 * The "Needs attention" region of the tokens page, the settings page and a token's page: what
 * expires, retires or is deleted for being unused within days, soonest first, and what to do.
 * `back` is where Extend returns to.
 */
export function noticesSection(v: {
  signedIn: SignedIn
  notices: readonly NoticeShown[]
  now: number
  back: string
  /** On the token's own page: "This token", not a link to where the person is. */
  own?: boolean
}) {
  if (v.notices.length === 0) return ''
  const shown = v.notices.slice(0, shownAtMost)
  const more = v.notices.length - shown.length
  return html`<section aria-labelledby="attention-heading" class="card attention">
  <h2 id="attention-heading">Needs attention</h2>
  <ul class="notices">
  ${shown.map(
    (n, i) => html`<li class="notice-${n.kind}">
    <p>${v.own ? 'This token' : html`<a href="/account/tokens/${n.token.id}">${tokenName(n.token)}</a> <span class="usage usage-${n.token.usage}">${n.token.usage}</span>`} ${what(n, v.now)}</p>
    ${actions(n, i, v.signedIn, v.back, v.now)}
  </li>`,
  )}
  </ul>
  ${more > 0 ? html`<p class="hint">And ${more} more.</p>` : ''}
  ${v.signedIn.role === 'viewer' ? html`<p class="hint">Developers and owners roll, extend and delete tokens.</p>` : ''}
</section>`
}
