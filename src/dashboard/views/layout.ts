import type { Role } from '../../people/members.js'
import { assetUrl } from './assets.js'
import { type Html, html } from './html.js'

export interface Frame {
  title: string
  /** Signed in: the header shows the navigation and `Sign out`. */
  signedIn?: {
    /** The account the session is in. */
    username: string
    csrf: string
    /** The person signed in, and their role in the account. */
    login: string
    role: Role
    /** The person belongs to more than one account: the header offers to switch. */
    switchable: boolean
    /** A portal link's way back to the platform. */
    returnUrl?: string
  }
  /** Scripts of this page besides app.js, in order (passkeys). */
  scripts?: string[]
  /** The navigation entry of this page. */
  section?: 'tokens' | 'usage' | 'requests' | 'scopes' | 'activity' | 'members' | 'settings'
}

export type SignedIn = NonNullable<Frame['signedIn']>

const nav = (frame: Frame) => {
  const link = (href: string, text: string, section: Frame['section']) =>
    html`<a href="${href}"${frame.section === section ? html` aria-current="page"` : ''}>${text}</a>`
  const user = frame.signedIn
  if (user === undefined) return ''
  return html`<nav aria-label="Main">
      ${link('/account', 'Access tokens', 'tokens')} ${link('/account/usage', 'Usage', 'usage')}
      ${link('/account/requests', 'Requests', 'requests')}
      ${link('/account/scopes', 'Scopes', 'scopes')}
      ${link('/account/activity', 'Activity', 'activity')} ${link('/account/members', 'Members', 'members')}
      ${link('/account/settings', 'Settings', 'settings')}
    </nav>
    ${user.returnUrl === undefined ? '' : html`<a class="back" href="${user.returnUrl}">${backText(user.returnUrl)}</a>`}
    <form method="post" action="/account/sign-out" class="sign-out" novalidate>
      <input type="hidden" name="_csrf" value="${user.csrf}">
      <span class="who">${who(user)}</span>
      <button type="submit" class="secondary">Sign out</button>
    </form>`
}

/** The account, and the person when theirs is another name; a way to switch when they can. */
const who = (user: SignedIn) => {
  const person =
    user.login === user.username ? '' : html` <span class="login">(${user.login})</span>`
  const account = user.switchable
    ? html`<a href="/account/accounts" title="Switch account">${user.username}</a>`
    : user.username
  return html`${account}${person}`
}

/** "Back to <the platform's host>": the link a portal link's page and header offer. */
export const backText = (url: string) => `Back to ${new URL(url).host}`

/** The whole document around a page's content. */
export const layout = (frame: Frame, content: Html) => html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>${frame.title} · Tessera</title>
<link rel="stylesheet" href="${assetUrl('app.css')}">
<script src="${assetUrl('app.js')}" defer></script>
${(frame.scripts ?? []).map((name) => html`<script src="${assetUrl(name)}" defer></script>\n`)}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/account"><span aria-hidden="true" class="logo"></span>Tessera</a>
  ${nav(frame)}
</header>
<main id="main">
<h1>${frame.title}</h1>
${content}
</main>
<footer class="bottom"><p>Tessera access tokens</p></footer>
</body>
</html>
`
