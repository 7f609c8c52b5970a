import type { TokenView } from '../../tokens/service.js'
import { html } from './html.js'

const hourMs = 3_600_000
const dayMs = 24 * hourMs

const day = new Intl.DateTimeFormat('en-GB', {
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  timeZone: 'UTC',
})

/** An instant as a day people read ("3 Dec 2026", UTC), with its time when it is near. */
export function dayOf(iso: string, now: number) {
  const at = Date.parse(iso)
  const clock = Math.abs(at - now) < 2 * dayMs ? `, ${iso.slice(11, 16)} UTC` : ''
  return html`<time datetime="${iso}">${day.format(at)}${clock}</time>`
}

/** How far ahead an instant is: "in 3 days", "in 5 hours", "in 20 minutes". */
export function fromNow(iso: string, now: number) {
  const ms = Date.parse(iso) - now
  if (ms <= 0) return 'now'
  const unit = (n: number, one: string) => `in ${n} ${one}${n === 1 ? '' : 's'}`
  // Rounded: a token made to end in 3 days still ends "in 3 days" a minute later.
  if (ms >= 2 * dayMs - hourMs / 2) return unit(Math.round(ms / dayMs), 'day')
  if (ms >= 2 * hourMs - 30_000) return unit(Math.round(ms / hourMs), 'hour')
  return unit(Math.max(1, Math.round(ms / 60_000)), 'minute')
}

/**
 * A token's end in the tokens list: a rolled token's (`retiresAt`, from the notices), else its
 * end of life, "Expires 3 Dec 2026", marked when within 7 days.
 */
export function expiryLine(t: TokenView, now: number, retiresAt?: string) {
  if (retiresAt !== undefined) {
    return html`<span class="expiry soon">Rolled: stops working ${dayOf(retiresAt, now)}</span>`
  }
  if (t.expiresAt === undefined) return ''
  const left = Date.parse(t.expiresAt) - now
  if (left <= 0) return html`<span class="expiry expired">Expired ${dayOf(t.expiresAt, now)}</span>`
  return html`<span class="expiry${left <= 7 * dayMs ? ' soon' : ''}">Expires ${dayOf(t.expiresAt, now)}</span>`
}
