import { alert, csrf, type FormError } from './forms.js'
import { html } from './html.js'
import { layout, type SignedIn } from './layout.js'

/**
 * Confirm it's you: before a change of who may act on the account, a recent proof. A password or
 * a code when the person has one; otherwise a fresh sign-in the way they came.
 */
export const confirmView = (v: {
  signedIn: SignedIn
  next: string
  password: boolean
  code: boolean
  /** The single sign-on button's text, when the person can sign in that way. */
  sso?: string
  /** A portal link's way back to the platform: a new link is the person's only proof. */
  returnUrl?: string
  error?: FormError
}) =>
  layout(
    { title: "Confirm it's you", signedIn: v.signedIn, section: 'settings' },
    html`<div class="narrow">
<p>Sign-in methods, members and their roles, invitations, the two-step policy and tokens that can make tokens change only with a recent proof that you are you (the last 10 minutes).</p>
${alert(v.error)}
${
  v.password || v.code
    ? html`<form method="post" action="/account/settings/confirm" class="card" novalidate>
  ${csrf(v.signedIn.csrf)}
  <input type="hidden" name="next" value="${v.next}">
  <input type="hidden" name="username" autocomplete="username" value="${v.signedIn.login}">
  ${
    v.password
      ? html`<label for="confirm-password">Password</label>
  <input id="confirm-password" name="password" type="password" autocomplete="current-password">`
      : ''
  }
  ${
    v.code
      ? html`<label for="confirm-code">Authenticator or recovery code</label>
  <input id="confirm-code" name="code" autocomplete="one-time-code" autocapitalize="none" spellcheck="false">`
      : ''
  }
  <button type="submit">Confirm</button>
</form>`
    : ''
}
${
  v.sso === undefined
    ? ''
    : html`<p class="sso"><a class="button secondary" href="/account/sso?next=${encodeURIComponent(v.next)}">${v.sso}</a></p>`
}
${
  v.password || v.code || v.sso !== undefined
    ? ''
    : html`<p>You signed in with a link from your platform: open a new one there to go on.</p>
${v.returnUrl === undefined ? '' : html`<p><a href="${v.returnUrl}">Back to ${new URL(v.returnUrl).host}</a></p>`}`
}
</div>`,
  )
