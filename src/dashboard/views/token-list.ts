import type { LeakEvidence } from '../../tokens/leaks.js'
import type { TokenView } from '../../tokens/service.js'
import { expiryLine } from './expiry.js'
import { notice, time } from './forms.js'
import { type Html, html, when } from './html.js'
import { layout, type SignedIn } from './layout.js'
import { type NoticeShown, noticesSection } from './notices.js'
import { tokenName } from './token-name.js'
import { breakable, tokenString } from './token-string.js'
import { leakReport } from './tokens.js'
import { lastUsedText } from './usage.js'

/** The tokens the list shows: those of one usage, those whose note or id holds a text. */
export interface TokenFilter {
  /** As typed, trimmed; '' for every token. */
  search: string
  usage?: 'pk' | 'sk'
}

/** The address of a page of the list, its filter kept. */
export function listHref(filter: TokenFilter, cursor?: { start?: string; before?: string }) {
  const q = new URLSearchParams()
  if (filter.search !== '') q.set('q', filter.search)
  if (filter.usage !== undefined) q.set('usage', filter.usage)
  if (cursor?.start !== undefined) q.set('start', cursor.start)
  if (cursor?.before !== undefined) q.set('before', cursor.before)
  const query = q.toString()
  return query === '' ? '/account' : `/account?${query}`
}

const list = (items: readonly (string | Html)[], none: string, kind = 'tags') =>
  items.length === 0
    ? html`<span class="none">${none}</span>`
    : html`<ul class="${kind}">${items.map((i) => html`<li>${i}</li>`)}</ul>`

/** Longer names are cut to three lines in the list: the whole one is the link's title. */
const longName = 60

const usageOption = (value: string, text: string, chosen: string) =>
  html`<option value="${value}"${when(chosen === value, 'selected')}>${text}</option>`

/** The search form: a GET, so that a search is an address (bookmarked, paged, no script). */
function searchForm(filter: TokenFilter) {
  const filtered = filter.search !== '' || filter.usage !== undefined
  return html`<form method="get" action="/account" class="search" role="search" aria-label="Tokens">
  <div class="field grow">
    <label for="token-search">Note or id</label>
    <input id="token-search" name="q" type="search" maxlength="1024" spellcheck="false" autocomplete="off" value="${filter.search}" aria-describedby="token-search-hint">
  </div>
  <div class="field">
    <label for="token-usage">Usage</label>
    <select id="token-usage" name="usage">
      ${usageOption('', 'pk and sk', filter.usage ?? '')}
      ${usageOption('pk', 'pk only', filter.usage ?? '')}
      ${usageOption('sk', 'sk only', filter.usage ?? '')}
    </select>
  </div>
  <button type="submit" class="secondary">Search</button>
  ${filtered ? html`<a href="/account" class="clear">Show all tokens</a>` : ''}
  <p class="hint" id="token-search-hint">Part of a token’s note or id; capitals or not.</p>
</form>`
}

/** What the list holds when a filter is set: said, and read out after a search. */
function filterSummary(filter: TokenFilter, shown: number, paged: boolean) {
  if (filter.search === '' && filter.usage === undefined) return ''
  const kind = `${filter.usage === undefined ? '' : `${filter.usage} `}token${shown === 1 ? '' : 's'}`
  const where = paged ? ' on this page' : ''
  const which = filter.search === '' ? '' : html` whose note or id contains “${filter.search}”`
  return html`<p role="status" class="summary">${shown === 0 ? 'No' : String(shown)} ${kind}${where}${which}.</p>`
}

export function tokensView(v: {
  signedIn: SignedIn
  tokens: TokenView[]
  next?: string
  previous?: string
  /** The last use of each token of the page that was ever used (ctx.usage.lastUsed). */
  lastUsed: ReadonlyMap<string, string>
  /** The service clock: what `unused for 90 days` is measured from. */
  now: number
  notice?: string
  /** Tokens of the account reported leaked and kept: id → when, where and by whom. */
  leaked?: ReadonlyMap<string, LeakEvidence>
  /** What needs attention soon (ctx.hygiene.upcoming), with Extend's end where allowed. */
  notices?: readonly NoticeShown[]
  filter?: TokenFilter
}) {
  const filter = v.filter ?? { search: '' }
  const retiring = new Map(
    (v.notices ?? []).filter((n) => n.kind === 'retiring').map((n) => [n.token.id, n.at]),
  )
  const row = (t: TokenView, i: number) => {
    const name = tokenName(t)
    return html`<tr>
  <th scope="row">
    <a href="/account/tokens/${t.id}"${name.length > longName ? html` class="long" title="${name}"` : ''}>${name}</a>${t.default ? html` <span class="badge">default</span>` : ''}
    ${expiryLine(t, v.now, retiring.get(t.id))}
    ${t.token === undefined ? '' : tokenString(`token-${i}`, t.token, 'short')}
  </th>
  <td data-label="Usage"><span class="usage usage-${t.usage}">${t.usage}</span></td>
  <td data-label="Scopes">${list(t.scopes, 'no scopes')}</td>
  <td data-label="Allowed URLs">${list((t.allowedUrls ?? []).map(breakable), 'any URL', 'tags urls')}</td>
  <td data-label="Created">${time(t.created)}</td>
  <td data-label="Modified">${time(t.modified)}</td>
  <td data-label="Last used">${lastUsedText(v.lastUsed.get(t.id), t.created, v.now)}</td>
</tr>`
  }
  const pager =
    v.next === undefined && v.previous === undefined
      ? ''
      : html`<nav class="pager" aria-label="Pages">
  ${v.previous === undefined ? '' : html`<a href="${listHref(filter, { before: v.previous })}">Previous page</a>`}
  ${v.next === undefined ? '' : html`<a href="${listHref(filter, { start: v.next })}">Next page</a>`}
</nav>`
  const table =
    v.tokens.length === 0
      ? ''
      : html`<table class="tokens">
<caption class="visually-hidden">Your access tokens</caption>
<thead><tr><th scope="col">Token</th><th scope="col">Usage</th><th scope="col">Scopes</th><th scope="col">Allowed URLs</th><th scope="col">Created</th><th scope="col">Modified</th><th scope="col">Last used</th></tr></thead>
<tbody>
${v.tokens.map(row)}
</tbody>
</table>`
  return layout(
    { title: 'Access tokens', signedIn: v.signedIn, section: 'tokens' },
    html`${leakAlert(v.tokens, v.leaked)}${notice(v.notice)}${noticesSection({ signedIn: v.signedIn, notices: v.notices ?? [], now: v.now, back: '/account' })}
<p class="lead">Tokens let your applications call the API. Public tokens (pk) may be used in web pages; secret tokens (sk) belong on your servers.</p>
${
  v.signedIn.role === 'viewer'
    ? html`<p class="hint">You are a viewer in this account: you can read everything here and change nothing.</p>`
    : html`<p class="actions"><a class="button" href="/account/tokens/new">Create a token</a> <a class="button secondary" href="/account/temporary">Create a temporary token</a></p>`
}
${searchForm(filter)}
${filterSummary(filter, v.tokens.length, v.next !== undefined || v.previous !== undefined)}
<p class="visually-hidden" id="copy-status" role="status"></p>
${table}
${pager}`,
  )
}

/** Tokens reported leaked and kept: said first, with the ones of this page and their reports. */
function leakAlert(tokens: readonly TokenView[], leaked?: ReadonlyMap<string, LeakEvidence>) {
  const n = leaked?.size ?? 0
  if (leaked === undefined || n === 0) return ''
  const here = tokens.filter((t) => leaked.has(t.id))
  const one = n === 1
  const links =
    here.length === 0
      ? '.'
      : html`: ${here.map((t, i) => html`${i > 0 ? ', ' : ''}<a href="/account/tokens/${t.id}">${tokenName(t)}</a>`)}.`
  const reports =
    here.length === 0
      ? ''
      : html`<ul class="leak-reports">${here.map((t) => html`<li><a href="/account/tokens/${t.id}">${tokenName(t)}</a>: ${leakReport(leaked.get(t.id))}</li>`)}</ul>`
  return html`<div role="alert" class="error leak"><p><strong>${String(n)} token${one ? ' was' : 's were'} reported leaked</strong>: found where others can see ${one ? 'it' : 'them'}. Roll ${one ? 'it' : 'them'} and give your applications the new strings${links}</p>${reports}</div>`
}
