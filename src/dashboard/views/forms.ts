import type { Scope } from '../../scopes/catalog.js'
import { html, when } from './html.js'

/** A refusal shown next to its form: the contract's message, and what exactly was wrong. */
export interface FormError {
  message: string
  details?: string
  /** Where to go to put it right (a dashboard path): "Confirm it's you", for one. */
  link?: { href: string; text: string }
}

export const alert = (error: FormError | undefined) =>
  error === undefined
    ? ''
    : html`<div role="alert" class="error" id="form-error">
  <p><strong>${error.message}</strong></p>
  ${error.details === undefined ? '' : html`<p>${capitalize(error.details)}.</p>`}
  ${error.link === undefined ? '' : html`<p><a href="${error.link.href}">${error.link.text}</a></p>`}
</div>`

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1).replace(/\.$/, '')

export const notice = (text: string | undefined) =>
  text === undefined ? '' : html`<p role="status" class="notice">${text}</p>`

export const csrf = (token: string) => html`<input type="hidden" name="_csrf" value="${token}">`

/**
 * One checkbox per scope, named by its id (its description is the checkbox's description),
 * grouped public and secret. `data-secret` lets the script say whether a token will be pk or sk.
 */
export function scopeChoices(scopes: readonly Scope[], checked: ReadonlySet<string>) {
  let n = 0
  const group = (legend: string, about: string, list: readonly Scope[]) =>
    list.length === 0
      ? ''
      : html`<fieldset class="scopes">
  <legend>${legend}</legend>
  <p class="hint">${about}</p>
  ${list.map((scope) => {
    const id = `scope-${++n}`
    return html`<div class="check">
    <input type="checkbox" id="${id}" name="scopes" value="${scope.id}" aria-describedby="${id}-about"${when(checked.has(scope.id), 'checked')}${when(!scope.public, 'data-secret')}>
    <label for="${id}">${scope.id}</label>
    <span class="about" id="${id}-about">${scope.description}</span>
  </div>`
  })}
</fieldset>`
  return html`${group(
    'Public scopes',
    'May be used in a public (pk) token, for example in a web page.',
    scopes.filter((s) => s.public),
  )}${group(
    'Secret scopes',
    'Any secret scope makes the token secret (sk): keep it on your servers.',
    scopes.filter((s) => !s.public),
  )}`
}

/** An ISO timestamp as people read it (to the minute, or the second), machine-readable underneath. */
export const time = (iso: string, precision: 'minute' | 'second' = 'minute') =>
  html`<time datetime="${iso}">${iso.slice(0, 10)} <span class="clock">${iso.slice(11, precision === 'second' ? 19 : 16)} UTC</span></time>`

/** A token string with a button that copies it (the button needs the script). */
export const copyable = (id: string, token: string) =>
  html`<div class="copy-row"><code id="${id}" class="token">${token}</code><button type="button" class="secondary copy" data-copy="${id}">Copy</button></div>`
