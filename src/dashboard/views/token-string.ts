import { type Html, html } from './html.js'

/** The end of a string a short token shows whatever the width: what tells two tokens apart. */
const tail = 6

/**
 * A token string and its Copy button. The button is the script's to show (app.js): without
 * scripts it would do nothing, and the string is there to select. `short` keeps it to one line,
 * cut in the middle with an ellipsis (the beginning is the same for every token of an account,
 * the end tells them apart): the whole string is still the element's text (what Copy copies and
 * a screen reader reads), its title, and on the token's page.
 */
export const tokenString = (id: string, token: string, length: 'short' | 'whole' = 'whole') =>
  html`<div class="copy-row">${
    length === 'short'
      ? html`<code id="${id}" class="token short" title="${token}"><span class="head">${token.slice(0, -tail)}</span><span class="tail">${token.slice(-tail)}</span></code>`
      : html`<code id="${id}" class="token">${token}</code>`
  }<button type="button" class="secondary copy" data-copy="${id}" hidden>Copy</button></div>`

/** After these a line may break in a URL, rather than anywhere in a word. */
const separators = /(?<=[/.?&=#_-])(?![/.?&=#_-])/

/** A URL or host name that wraps at its slashes, dots and hyphens: `<wbr>` after each. */
export const breakable = (url: string): Html => {
  const parts = url.split(separators)
  return html`${parts.map((part, i) => (i === 0 ? part : html`<wbr>${part}`))}`
}
