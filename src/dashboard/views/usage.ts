import { time } from './forms.js'
import { type Html, html } from './html.js'

const hourMs = 3_600_000
const dayMs = 24 * hourMs
/** Unused for longer than this (or never used, and created longer ago): worth a look. */
export const staleAfterMs = 90 * dayMs

const number = new Intl.NumberFormat('en-US')
export const count = (n: number) => number.format(n)

/** Last used, or created when never used, more than 90 days before `now`. */
export const isStale = (lastUsed: string | undefined, created: string, now: number) =>
  now - Date.parse(lastUsed ?? created) > staleAfterMs

/** The `Last used` of a token: the minute, or `never used`; and the 90-day mark. */
export function lastUsedText(lastUsed: string | undefined, created: string, now: number): Html {
  const when = lastUsed === undefined ? html`<span class="none">never used</span>` : time(lastUsed)
  const stale = isStale(lastUsed, created, now)
    ? html` <span class="mark stale">unused for 90 days</span>`
    : ''
  return html`${when}${stale}`
}
