import type { TokenView } from '../../tokens/service.js'
import { expiryLine } from './expiry.js'
import { html } from './html.js'
import { tokenName } from './token-name.js'

/** A token's family as its page shows it (docs/machines.md): its parent and its children. */
export interface FamilyShown {
  /** The token it was made under, or its id alone when it can no longer be read. */
  parent?: TokenView | { id: string }
  /** Its children in created order: the first page of them. */
  children: readonly TokenView[]
  /** Whether it has more children than those shown. */
  more: boolean
}

const tokenLink = (t: TokenView | { id: string }) =>
  'usage' in t
    ? html`<a href="/account/tokens/${t.id}">${tokenName(t)}</a>`
    : html`<code class="id">${t.id}</code>`

const childItem = (t: TokenView, now: number) => {
  const end = expiryLine(t, now)
  return html`<li>${tokenLink(t)} <span class="usage usage-${t.usage}">${t.usage}</span>${end === '' ? '' : html` · ${end}`}</li>`
}

/** The "Parent and children" section of a token's page. */
export function familySection(
  family: FamilyShown,
  token: { id: string; username: string },
  now: number,
) {
  const { parent, children } = family
  const api = `/tokens/v2/${token.username}`
  return html`<section aria-labelledby="family-heading" class="part">
<h2 id="family-heading">Parent and children</h2>
<div class="card">
  <dl class="facts">
    ${parent === undefined ? '' : html`<dt>Made under</dt><dd>${tokenLink(parent)}</dd>`}
    <dt>Children</dt><dd>${
      children.length === 0
        ? html`<span class="none">No child tokens.</span>`
        : html`<ul class="plain" aria-label="Child tokens">
      ${children.map((c) => childItem(c, now))}
    </ul>${family.more ? html`<p class="hint">The first ${children.length} are shown; the API lists them all (<code>GET ${api}?parent=${token.id}</code>).</p>` : ''}`
    }</dd>
  </dl>
  <p class="hint">A child token is never wider than its parent and ends with it. Child tokens are made through the API (<code>POST ${api}/${token.id}/children</code>).</p>
</div>
</section>`
}
