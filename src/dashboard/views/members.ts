import type { Invitation, Member, Role } from '../../people/members.js'
import { roles } from '../../people/members.js'
import { alert, csrf, type FormError, notice, time } from './forms.js'
import { html, when } from './html.js'
import { backText, layout, type SignedIn } from './layout.js'

/** Members, invitations, joining an account, choosing one, and portal links. */

const roleText: Record<Role, string> = {
  owner: 'Owner: everything, members included',
  developer: 'Developer: creates, edits and deletes tokens',
  viewer: 'Viewer: reads every page, changes nothing',
}

const roleSelect = (id: string, name: string, selected: Role, label?: string) =>
  html`<select id="${id}" name="${name}"${label === undefined ? '' : html` aria-label="${label}"`}>
  ${roles.map((r) => html`<option value="${r}"${when(r === selected, 'selected')}>${r}</option>`)}
</select>`

export function membersView(v: {
  signedIn: SignedIn
  members: Member[]
  invitations: Invitation[]
  /** Whether the account (or the operator, for every account) requires a second factor. */
  policy: { required: boolean; byOperator: boolean }
  /**
   * A new invitation's link, shown once to the owner who made it; whether it was mailed too
   * (undefined without mail).
   */
  created?: { url: string; email: string; role: Role; mailed?: boolean }
  values?: { email: string; role: Role }
  error?: FormError
  notice?: string
}) {
  const owner = v.signedIn.role === 'owner'
  // A name comes with portal links and single sign-on: the column only when someone has one.
  const names = v.members.some((m) => m.name !== undefined)
  const row = (m: Member) => html`<tr>
  <th scope="row">${m.login}${m.login === v.signedIn.login ? html` <span class="badge">you</span>` : ''}</th>
  ${names ? html`<td data-label="Name">${m.name ?? ''}</td>` : ''}
  <td data-label="Email">${m.email ?? html`<span class="none">none</span>`}</td>
  <td data-label="Role">${
    owner
      ? html`<form method="post" action="/account/members/${m.login}/role" class="inline" novalidate>
    ${csrf(v.signedIn.csrf)}
    ${roleSelect(`role-${m.login}`, 'role', m.role, `Role of ${m.login}`)}
    <button type="submit" class="secondary" aria-label="Change role of ${m.login}">Change role</button>
  </form>`
      : m.role
  }</td>
  <td data-label="Joined">${time(m.created)}</td>
  ${
    owner
      ? html`<td data-label="Actions"><form method="post" action="/account/members/${m.login}/remove" class="inline" novalidate>
    ${csrf(v.signedIn.csrf)}
    <button type="submit" class="danger" aria-label="Remove ${m.login}">Remove</button>
  </form></td>`
      : ''
  }
</tr>`
  return layout(
    { title: 'Members', signedIn: v.signedIn, section: 'members' },
    html`${notice(v.notice)}${
      v.created === undefined
        ? ''
        : html`<div class="card">
  <p class="warning">Pass this link on to ${v.created.email}: it lets one person join as ${v.created.role}, within 7 days. It will not be shown again.</p>
  ${mailedNotice(v.created)}
  <label for="invitation-link">Invitation link</label>
  <div class="copy-row"><input id="invitation-link" readonly value="${v.created.url}" spellcheck="false"><button type="button" class="secondary copy" data-copy="invitation-link" hidden>Copy</button></div>
  <p class="visually-hidden" id="copy-status" role="status"></p>
</div>`
    }
<table class="members">
<caption class="visually-hidden">Members of ${v.signedIn.username}</caption>
<thead><tr><th scope="col">Username</th>${names ? html`<th scope="col">Name</th>` : ''}<th scope="col">Email</th><th scope="col">Role</th><th scope="col">Joined</th>${owner ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
<tbody>
${v.members.map(row)}
</tbody>
</table>
${owner ? ownerSections(v) : html`<p class="hint">Owners invite members and change their roles.</p>`}`,
  )
}

type MembersPage = Parameters<typeof membersView>[0]

const mailedNotice = (created: { email: string; mailed?: boolean }) =>
  created.mailed === undefined
    ? ''
    : created.mailed
      ? html`<p role="status">An invitation mail with this link is on its way to ${created.email}.</p>`
      : html`<p role="status">This invitation was not mailed: this account or this address has reached its limit of invitation mails for 24 hours. Pass the link on yourself.</p>`

/** What only owners see below the members: invitations, the sign-in policy, inviting. */
function ownerSections(v: MembersPage) {
  return html`${invitationsSection(v)}
${policySection(v)}
${inviteSection(v)}`
}

function invitationsSection(v: MembersPage) {
  if (v.invitations.length === 0) return ''
  return html`<section aria-labelledby="invitations-heading" class="card">
  <h2 id="invitations-heading">Open invitations</h2>
  <ul class="plain">
  ${v.invitations.map(
    (i) => html`<li>${i.email} as ${i.role}, until ${time(i.expires)}
    <form method="post" action="/account/members/invitations/${i.id}/revoke" class="inline" novalidate>
      ${csrf(v.signedIn.csrf)}
      <button type="submit" class="secondary" aria-label="Revoke invitation for ${i.email}">Revoke</button>
    </form></li>`,
  )}
  </ul>
</section>`
}

function policySection(v: MembersPage) {
  return html`<section aria-labelledby="policy-heading" class="card sign-in-policy">
  <h2 id="policy-heading">Sign-in policy</h2>
  ${
    v.policy.byOperator
      ? html`<p>Your operator requires a second factor of every member of every account.</p>`
      : html`<form method="post" action="/account/members/policy" novalidate>
    ${csrf(v.signedIn.csrf)}
    <div class="check">
      <input type="checkbox" id="require2fa" name="require2fa"${when(v.policy.required, 'checked')} aria-describedby="require2fa-about">
      <label for="require2fa">Require two-step sign-in</label>
      <span class="about" id="require2fa-about">Members who sign in with a password must also give a code from an authenticator app; those without one are led to set it up and can do nothing else until they have. Single sign-on and portal links count as your platform's own check.</span>
    </div>
    <button type="submit" class="secondary">Save policy</button>
  </form>`
  }
</section>`
}

function inviteSection(v: MembersPage) {
  const values = v.values ?? { email: '', role: 'developer' as Role }
  return html`<section aria-labelledby="invite-heading" class="card">
  <h2 id="invite-heading">Invite a member</h2>
  ${alert(v.error)}
  <form method="post" action="/account/members/invite" novalidate>
    ${csrf(v.signedIn.csrf)}
    <label for="invite-email">Email</label>
    <input id="invite-email" name="email" type="email" autocomplete="off" required value="${values.email}">
    <label for="invite-role">Role</label>
    ${roleSelect('invite-role', 'role', values.role)}
    <ul class="hint roles">${roles.map((r) => html`<li>${roleText[r]}</li>`)}</ul>
    <button type="submit">Create invitation link</button>
  </form>
  <p class="hint">No email is sent: you pass the link on. It works once, within 7 days.</p>
</section>`
}

/** An invitation link's page: join as the person signed in, or as a new person. */
export function invitationView(v: {
  action: string
  username: string
  role: string
  email: string
  /** The person this browser is signed in as, if any. */
  signedInAs?: string
  values?: { login: string }
  error?: FormError
}) {
  const signIn = `/account/sign-in?next=${encodeURIComponent(v.action)}`
  return layout(
    { title: `Join ${v.username}` },
    html`<div class="narrow">
<p>You are invited to the account <strong>${v.username}</strong> as <strong>${v.role}</strong> (invitation for ${v.email}).</p>
${alert(v.error)}
${
  v.signedInAs === undefined
    ? html`<form method="post" action="${v.action}" class="card" novalidate>
  <label for="username">Username</label>
  <input id="username" name="login" autocomplete="username" autocapitalize="none" spellcheck="false" required aria-describedby="username-rule" value="${v.values?.login ?? ''}">
  <p class="hint" id="username-rule">Yours to sign in with: 1 to 32 characters, a-z, 0-9, _ and -.</p>
  <label for="new-password">New password</label>
  <input id="new-password" name="password" type="password" autocomplete="new-password" minlength="12" maxlength="256" required aria-describedby="password-rule">
  <p class="hint" id="password-rule">At least 12 characters.</p>
  <label for="confirm-password">Confirm password</label>
  <input id="confirm-password" name="confirm" type="password" autocomplete="new-password" required>
  <button type="submit">Join ${v.username}</button>
</form>
<p>Already have a username here? <a href="${signIn}">Sign in first</a>, then open this link again.</p>`
    : html`<form method="post" action="${v.action}" class="card" novalidate>
  <input type="hidden" name="as" value="${v.signedInAs}">
  <p>You are signed in as <strong>${v.signedInAs}</strong>.</p>
  <button type="submit">Join ${v.username}</button>
</form>`
}
</div>`,
  )
}

/** After signing in, a person in several accounts picks one; the header's link leads here too. */
export function accountsView(v: {
  signedIn: SignedIn
  accounts: { username: string; role: Role }[]
  next: string
}) {
  return layout(
    { title: 'Choose an account', signedIn: v.signedIn },
    html`<p>You belong to ${v.accounts.length} accounts. You are in <strong>${v.signedIn.username}</strong>.</p>
<ul class="plain accounts">
${v.accounts.map(
  (a) => html`<li><form method="post" action="/account/accounts" class="inline" novalidate>
  ${csrf(v.signedIn.csrf)}
  <input type="hidden" name="account" value="${a.username}">
  <input type="hidden" name="next" value="${v.next}">
  <button type="submit"${a.username === v.signedIn.username ? '' : html` class="secondary"`} aria-describedby="role-${a.username}">${a.username}</button>
  <span class="hint" id="role-${a.username}">${a.role}</span>
</form></li>`,
)}
</ul>`,
  )
}

/** A portal link's page: nothing happens until the person continues (a POST). */
/** A portal link's page: whose account it opens, as whom, before anything is used. */
export function portalView(v: {
  action: string
  returnUrl: string | null
  username: string
  email: string
  role: Role
}) {
  return layout(
    { title: 'Manage your access tokens' },
    html`<div class="narrow">
<p>This link signs you in to the account <strong>${v.username}</strong> as <strong>${v.email}</strong>, with the role <strong>${v.role}</strong>.</p>
<p class="hint">Continue only if you asked for it: someone else's link would sign you in to their account.</p>
<form method="post" action="${v.action}" class="card" novalidate>
  <button type="submit">Continue</button>
</form>
${v.returnUrl === null ? '' : html`<p><a href="${v.returnUrl}">${backText(v.returnUrl)}</a></p>`}
</div>`,
  )
}
