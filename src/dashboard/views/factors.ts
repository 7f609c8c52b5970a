import type { FactorView } from '../../people/factors.js'
import { type PasskeyPlace, passkeyButton, passkeyOffer, passkeyScripts } from './auth.js'
import { alert, csrf, type FormError, time } from './forms.js'
import { Html, html } from './html.js'
import { layout, type SignedIn } from './layout.js'

/** Two-step sign-in: the second step, the settings of one's factors, enrolment, codes. */

const codeField = (label: string) => html`<label for="code">${label}</label>
  <input id="code" name="code" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required aria-describedby="code-hint">`

/**
 * After a right password: a code from the authenticator app, or a recovery code; or one of the
 * person's passkeys (`passkeys`), where this page's address allows them (`place`).
 */
export const verifyView = (v: { passkeys: boolean; place: PasskeyPlace; error?: FormError }) =>
  layout(
    { title: 'Two-step sign-in', scripts: v.passkeys && v.place.offered ? passkeyScripts : [] },
    html`<div class="narrow">
<p>Enter the 6-digit code your authenticator app shows, or one of your recovery codes.</p>
${alert(v.error)}
<form method="post" action="/account/sign-in/verify" class="card" novalidate>
  ${codeField('Code')}
  <p class="hint" id="code-hint">A recovery code works once.</p>
  <button type="submit">Verify</button>
</form>
${v.passkeys ? passkeyOffer(v.place, '/account/sign-in', () => passkeyButton('second', 'Use a passkey')) : ''}
<p><a href="/account/sign-in">Start again</a></p>
</div>`,
  )

/** The part of Settings about one's own second factors. */
export function factorsSection(v: {
  signedIn: SignedIn
  factors: FactorView[]
  codesLeft: number
  required: boolean
  error?: FormError
  /** Where passkeys work, when not at this page's address (pages/passkeys.ts passkeyPlace). */
  passkeys?: PasskeyPlace
}) {
  const app = v.factors.find((f) => f.kind === 'totp')
  return html`<section aria-labelledby="factors-heading" class="card">
  <h2 id="factors-heading">Two-step sign-in</h2>
  ${v.required ? html`<p class="warning">Your account requires a second factor at sign-in.</p>` : ''}
  ${alert(v.error)}
  ${
    v.factors.length === 0
      ? html`<p>Off. After your password, ask for a code from an authenticator app too.</p>`
      : html`<ul class="plain">${v.factors.map(
          (f) => html`<li><span><strong>${f.name}</strong> · added ${time(f.created)}${
            f.lastUsed === undefined ? '' : html` · last used ${time(f.lastUsed)}`
          }</span>
    <form method="post" action="/account/settings/factors/${f.id}/remove" class="inline" novalidate>
      ${csrf(v.signedIn.csrf)}
      <button type="submit" class="secondary" aria-label="Remove ${f.name}">Remove</button>
    </form></li>`,
        )}</ul>
  <p>Recovery codes left: ${String(v.codesLeft)}.</p>
  <form method="post" action="/account/settings/recovery-codes" novalidate>
    ${csrf(v.signedIn.csrf)}
    <button type="submit" class="secondary">Generate new recovery codes</button>
  </form>`
  }
  <p><a href="/account/settings/totp">${app === undefined ? 'Set up an authenticator app' : 'Replace the authenticator app'}</a></p>
  ${passkeyOffer(
    v.passkeys ?? { offered: true },
    '/account/settings',
    () => html`<form method="post" action="/account/passkeys/register" class="passkey-form" novalidate>
    ${csrf(v.signedIn.csrf)}
    <label for="passkey-name">Passkey name</label>
    <input id="passkey-name" name="name" maxlength="64" value="Passkey" aria-describedby="passkey-hint">
    <p class="hint" id="passkey-hint">Sign in with your fingerprint, face or device PIN instead of a password and code.</p>
    ${passkeyButton('register', 'Add a passkey')}
  </form>`,
  )}
</section>`
}

/** Enrolling an authenticator app: its QR code and secret, and the first code to confirm. */
export function totpView(v: {
  signedIn: SignedIn
  secret: string
  svg: string
  held: boolean
  error?: FormError
}) {
  return layout(
    { title: 'Set up an authenticator app', signedIn: v.signedIn, section: 'settings' },
    html`${v.held ? html`<p class="warning">Your account requires a second factor: set one up to go on.</p>` : ''}
<div class="card">
  <p>Scan this code with your authenticator app, or enter the key by hand.</p>
  <div class="qr" role="img" aria-label="QR code of the key">${new Html(v.svg)}</div>
  <p>Key: <code class="secret">${v.secret.replace(/(.{4})/g, '$1 ').trim()}</code></p>
</div>
${alert(v.error)}
<form method="post" action="/account/settings/totp" class="card narrow" novalidate>
  ${csrf(v.signedIn.csrf)}
  ${codeField('Code from the app')}
  <p class="hint" id="code-hint">The 6 digits it shows now.</p>
  <button type="submit">Turn on</button>
</form>`,
  )
}

/** New recovery codes, shown once, with a way to save them as a file. */
export function recoveryCodesView(v: { signedIn: SignedIn; codes: string[] }) {
  return layout(
    { title: 'Your recovery codes', signedIn: v.signedIn, section: 'settings' },
    html`<p class="warning">Keep these somewhere safe: each works once, in place of a code from your app. They will not be shown again; earlier codes no longer work.</p>
<ul class="codes">${v.codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
<form method="post" action="/account/settings/recovery-codes.txt" class="inline" novalidate>
  ${csrf(v.signedIn.csrf)}
  ${v.codes.map((c) => html`<input type="hidden" name="code" value="${c}">`)}
  <button type="submit" class="secondary">Download as a text file</button>
</form>
<p><a href="/account/settings">Done</a></p>`,
  )
}
