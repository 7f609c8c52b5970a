import type { Scope } from '../../scopes/catalog.js'
import { html, when } from './html.js'

/** A refusal shown next to its form: the contract's message, and what exactly was wrong. */
export interface FormError {
  message: string
  details?: string
  /** Where to go to put it right (a dashboard path): "Confirm it's you", for one. */
  link?: { href: string; text: string }
  /**
   * What to put right at each field: said at the field (`fieldError`), and listed in the alert
   * as links to it.
   */
  fields?: readonly FieldError[]
  /** The API's message for the same refusal (the contract's text), said beneath for scripts. */
  api?: string
}

/** A sentence said at one control, named by its id. */
export interface FieldError {
  id: string
  text: string
}

export const alert = (error: FormError | undefined) =>
  error === undefined
    ? ''
    : html`<div role="alert" class="error" id="form-error">
  <p><strong>${error.message}</strong></p>
  ${error.details === undefined ? '' : html`<p>${capitalize(error.details)}.</p>`}
  ${error.fields === undefined || error.fields.length === 0 ? '' : html`<ul class="error-list">${error.fields.map((f) => html`<li><a href="#${f.id}">${f.text}</a></li>`)}</ul>`}
  ${error.api === undefined ? '' : html`<p class="hint">The API answers this with “${error.api}”.</p>`}
  ${error.link === undefined ? '' : html`<p><a href="${error.link.href}">${error.link.text}</a></p>`}
</div>`

/** What a refusal says at the control `id`, if anything. */
export const problemAt = (error: FormError | undefined, id: string) =>
  error?.fields?.find((f) => f.id === id)?.text

/**
 * A control's description and, when the refusal concerns it, its sentence: `aria-describedby`
 * (the hint and the sentence) and `aria-invalid` as attributes, and the sentence to show.
 */
export function described(hint: string, id: string, error: FormError | undefined) {
  const text = problemAt(error, id)
  if (text === undefined) return { attributes: html` aria-describedby="${hint}"`, message: '' }
  return {
    attributes: html` aria-describedby="${id}-error ${hint}" aria-invalid="true"`,
    message: fieldError(id, text),
  }
}

/** The sentence at a field: read with the control (its id is in the control's describedby). */
export const fieldError = (id: string, text: string) =>
  html`<p class="field-error" id="${id}-error">${text}</p>`

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1).replace(/\.$/, '')

export const notice = (text: string | undefined) =>
  text === undefined ? '' : html`<p role="status" class="notice">${text}</p>`

export const csrf = (token: string) => html`<input type="hidden" name="_csrf" value="${token}">`

/**
 * One checkbox per scope, named by its id (its description is the checkbox's description),
 * grouped public and secret. `data-secret` lets the script say whether a token will be pk or sk.
 * A refusal's sentence about the scopes (`problem`, FieldError id `scopes`) goes above them.
 */
export function scopeChoices(
  scopes: readonly Scope[],
  checked: ReadonlySet<string>,
  problem?: string,
) {
  let n = 0
  const group = (legend: string, about: string, list: readonly Scope[]) =>
    list.length === 0
      ? ''
      : html`<fieldset class="scopes"${problem === undefined ? '' : html` aria-describedby="scopes-error"`}>
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
  const groups = html`${group(
    'Public scopes',
    'May be used in a public (pk) token, for example in a web page.',
    scopes.filter((s) => s.public),
  )}${group(
    'Secret scopes',
    'Any secret scope makes the token secret (sk): keep it on your servers.',
    scopes.filter((s) => !s.public),
  )}`
  return problem === undefined
    ? groups
    : html`<div id="scopes" class="invalid-group" tabindex="-1">${fieldError('scopes', problem)}${groups}</div>`
}

/** An ISO timestamp as people read it (to the minute, or the second), machine-readable underneath. */
export const time = (iso: string, precision: 'minute' | 'second' = 'minute') =>
  html`<time datetime="${iso}">${iso.slice(0, 10)} <span class="clock">${iso.slice(11, precision === 'second' ? 19 : 16)} UTC</span></time>`
