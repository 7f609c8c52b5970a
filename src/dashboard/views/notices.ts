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
    return html`was rolled: it stops working ${when}. Make sure your applications use the new string.`
  }
  return html`has not been used for a long time: it will be deleted ${when}. Use it to keep it, or delete it now.`
}

/** The accessible names of a notice's actions (those it has), each naming its token. */
interface Names {
  extend?: string
  roll?: string
  remove: string
}

function namesOf(n: NoticeShown): Names {
  const name = tokenName(n.token)
  // Only a token's end of life is extended: not a rolled token's old string, nor an idle one.
  const extend = n.kind === 'expiring' && n.extendTo !== undefined ? `Extend ${name}` : undefined
  // A rolled token is not rolled again: its successor is.
  const roll = n.kind === 'idle' ? `Roll ${name}` : undefined
  // A rolled token's old string is deleted from its own line; its successor, of the same name,
  // from the successor's.
  const remove = n.kind === 'retiring' ? `Delete the old string of ${name}` : `Delete ${name}`
  return { ...(extend && { extend }), ...(roll && { roll }), remove }
}

/**
 * The names of every notice's actions, unique in the region: two tokens of one note are told
 * apart by their ids.
 */
function uniqueNames(notices: readonly NoticeShown[]): Names[] {
  const names = notices.map(namesOf)
  const seen = new Map<string, number>()
  for (const n of names) for (const v of Object.values(n)) seen.set(v, (seen.get(v) ?? 0) + 1)
  return names.map((n, i) => {
    const own = (v: string) => ((seen.get(v) ?? 0) > 1 ? `${v} (${notices[i]?.token.id})` : v)
    return {
      ...(n.extend && { extend: own(n.extend) }),
      ...(n.roll && { roll: own(n.roll) }),
      remove: own(n.remove),
    }
  })
}

/** Extend, Roll and Delete of a notice, for the roles that change tokens. */
function actions(
  n: NoticeShown,
  i: number,
  names: Names,
  v: { signedIn: SignedIn; back: string; now: number },
) {
  if (v.signedIn.role === 'viewer') return ''
  const id = n.token.id
  const extend =
    names.extend === undefined || n.extendTo === undefined
      ? ''
      : html`<form method="post" action="/account/tokens/${id}/extend" class="inline" novalidate>
      ${csrf(v.signedIn.csrf)}
      <input type="hidden" name="back" value="${v.back}">
      <button type="submit" class="secondary" aria-label="${names.extend}" aria-describedby="extend-${i}">Extend</button>
      <span class="hint" id="extend-${i}">to ${dayOf(n.extendTo, v.now)}</span>
    </form>`
  const roll =
    names.roll === undefined
      ? ''
      : html`<a class="button secondary" href="/account/tokens/${id}#roll" aria-label="${names.roll}">Roll</a>`
  return html`<div class="notice-actions">${extend}${roll}<a class="button secondary" href="/account/tokens/${id}/delete" aria-label="${names.remove}">Delete</a></div>`
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
  const names = uniqueNames(shown)
  return html`<section aria-labelledby="attention-heading" class="card attention">
  <h2 id="attention-heading">Needs attention</h2>
  <ul class="notices">
  ${shown.map(
    (n, i) => html`<li class="notice-${n.kind}">
    <p>${v.own ? 'This token' : html`<a href="/account/tokens/${n.token.id}">${tokenName(n.token)}</a>${n.kind === 'retiring' ? html` <span class="badge">old string</span>` : ''} <span class="usage usage-${n.token.usage}">${n.token.usage}</span>`} ${what(n, v.now)}</p>
    ${actions(n, i, names[i] as Names, v)}
  </li>`,
  )}
  </ul>
  ${more > 0 ? html`<p class="hint">And ${more} more.</p>` : ''}
  ${v.signedIn.role === 'viewer' ? html`<p class="hint">Developers and owners roll, extend and delete tokens.</p>` : ''}
</section>`
}
