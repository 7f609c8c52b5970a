import { alert, type FormError } from './forms.js'
import { type Html, html } from './html.js'
import { layout } from './layout.js'

export const passkeyScripts = ['webauthn.js', 'passkeys.js']

/** A passkey button: off until the script finds WebAuthn; without scripts, a line says why. */
export const passkeyButton = (
  ceremony: 'signin' | 'second' | 'register',
  text: string,
  next?: string,
) =>
  html`<div class="passkey">
  <button type="${ceremony === 'register' ? 'submit' : 'button'}" class="secondary" data-passkey="${ceremony}"${next === undefined ? '' : html` data-next="${next}"`} disabled>${text}</button>
  <p class="hint needs-script">Passkeys need JavaScript, which is off in this browser.</p>
  <p class="visually-hidden" id="passkey-status" role="status"></p>
</div>`

/**
 * Whether a page offers passkeys: only at the relying party's own origin (the server's
 * PUBLIC_URL, by default https://localhost:PORT), since a browser refuses a ceremony anywhere
 * else and at any IP address. Where not, `at` is the origin where they work; none where they
 * work nowhere (PUBLIC_URL is an IP address).
 */
export type PasskeyPlace = { offered: true } | { offered: false; at?: string }

/** Passkeys offered, or the line that says where they work instead (`path`: this page). */
export const passkeyOffer = (place: PasskeyPlace, path: string, offer: () => Html) => {
  if (place.offered) return offer()
  if (place.at === undefined) {
    return html`<p class="hint">Passkeys are not offered here: browsers allow them only at a domain name, and this server's address is an IP address.</p>`
  }
  return html`<p class="hint">Passkeys work at this server's own address: <a href="${place.at}${path}">${place.at}</a>.</p>`
}

/** Sign in, set a password (setup link) and sign up: the pages before a session. */

export const signInView = (v: {
  username?: string
  next: string
  error?: FormError
  signUp: boolean
  /** The single sign-on button's text, when it is offered. */
  sso?: string
  passkeys: PasskeyPlace
}) =>
  layout(
    { title: 'Sign in', scripts: v.passkeys.offered ? passkeyScripts : [] },
    html`<div class="narrow">
${alert(v.error)}
<form method="post" action="/account/sign-in" class="card" novalidate>
  <input type="hidden" name="next" value="${v.next}">
  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${v.username ?? ''}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
</form>
${
  v.sso === undefined
    ? ''
    : html`<p class="sso"><a class="button secondary" href="/account/sso?next=${encodeURIComponent(v.next)}">${v.sso}</a></p>`
}
${passkeyOffer(v.passkeys, '/account/sign-in', () => passkeyButton('signin', 'Sign in with a passkey', v.next))}
<p class="hint">Forgot your password? Ask your operator for a new setup link.</p>
${v.signUp ? html`<p>No account yet? <a href="/account/sign-up">Create an account</a></p>` : ''}
</div>`,
  )

export const setupView = (v: { action: string; username: string; error?: FormError }) =>
  layout(
    { title: 'Set your password' },
    html`<div class="narrow">
<p>Choose the password for the account <strong>${v.username}</strong>: 12 to 256 characters.</p>
${alert(v.error)}
<form method="post" action="${v.action}" class="card" novalidate>
  <input type="hidden" name="username" autocomplete="username" value="${v.username}">
  <label for="new-password">New password</label>
  <input id="new-password" name="password" type="password" autocomplete="new-password" minlength="12" maxlength="256" required aria-describedby="password-rule">
  <p class="hint" id="password-rule">At least 12 characters. A few unrelated words make a good one.</p>
  <label for="confirm-password">Confirm password</label>
  <input id="confirm-password" name="confirm" type="password" autocomplete="new-password" required>
  <button type="submit">Set password</button>
</form>
</div>`,
  )

export const signUpView = (v: { username?: string; error?: FormError }) =>
  layout(
    { title: 'Create an account' },
    html`<div class="narrow">
${alert(v.error)}
<form method="post" action="/account/sign-up" class="card" novalidate>
  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required aria-describedby="username-rule" value="${v.username ?? ''}">
  <p class="hint" id="username-rule">1 to 32 characters: a-z, 0-9, _ and -, starting with a letter or digit.</p>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="12" maxlength="256" required aria-describedby="password-rule">
  <p class="hint" id="password-rule">At least 12 characters.</p>
  <button type="submit">Create account</button>
</form>
<p>Have an account? <a href="/account/sign-in">Sign in</a></p>
</div>`,
  )

/** A page that only says something: errors, a used link, too many attempts. */
export const messageView = (
  title: string,
  lines: string[],
  link?: { href: string; text: string },
) =>
  layout(
    { title },
    html`<div class="narrow">
${lines.map((line) => html`<p>${line}</p>`)}
${link === undefined ? '' : html`<p><a href="${link.href}">${link.text}</a></p>`}
</div>`,
  )
