// Passkeys: the one part of the dashboard that needs JavaScript (WebAuthn is a browser API).
// Uses @simplewebauthn/browser (webauthn.js, served beside this file). Every ceremony ends in
// a plain form POST, so the server answers as for any form: a redirect, or a page.
const webauthn = window.SimpleWebAuthnBrowser

function say(text) {
  const status = document.getElementById('passkey-status')
  if (status) status.textContent = text
}

async function options(url, fields) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  })
  if (!response.ok) {
    const answer = await response.json().catch(() => ({}))
    // A recent proof is needed first: the page that asks for it comes back here after.
    if (typeof answer.confirm === 'string') window.location.assign(answer.confirm)
    throw new Error(answer.message ?? `the server answered ${response.status}`)
  }
  return response.json()
}

function submit(action, fields) {
  const form = document.createElement('form')
  form.method = 'post'
  form.action = action
  for (const [name, value] of Object.entries(fields)) {
    const input = document.createElement('input')
    input.type = 'hidden'
    input.name = name
    input.value = value
    form.append(input)
  }
  document.body.append(form)
  form.submit()
}

const ceremonies = {
  async register(button) {
    const form = button.form
    const csrf = form.querySelector('input[name="_csrf"]').value
    const name = form.querySelector('input[name="name"]').value
    const optionsJSON = await options('/account/passkeys/register/options', { _csrf: csrf })
    const response = await webauthn.startRegistration({ optionsJSON })
    submit('/account/passkeys/register', { _csrf: csrf, name, response: JSON.stringify(response) })
  },
  async signin(button) {
    const next = button.dataset.next ?? '/account'
    const optionsJSON = await options('/account/passkeys/signin/options', {})
    const response = await webauthn.startAuthentication({ optionsJSON })
    submit('/account/passkeys/signin', { next, response: JSON.stringify(response) })
  },
  async second() {
    const optionsJSON = await options('/account/passkeys/second/options', {})
    const response = await webauthn.startAuthentication({ optionsJSON })
    submit('/account/sign-in/verify', { passkey: JSON.stringify(response) })
  },
}

if (webauthn?.browserSupportsWebAuthn()) {
  for (const note of document.querySelectorAll('.needs-script')) note.hidden = true
  for (const button of document.querySelectorAll('button[data-passkey]')) {
    button.disabled = false
    button.addEventListener('click', async (event) => {
      event.preventDefault()
      say('')
      try {
        await ceremonies[button.dataset.passkey](button)
      } catch (err) {
        say(`The passkey was not used: ${err.message}`)
      }
    })
  }
}
