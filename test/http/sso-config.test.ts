import { afterEach, beforeEach, expect, it } from 'vitest'
import { type Harness, harness } from '../helpers.js'
import { DashboardClient, titleOf } from './dashboard-client.js'

let h: Harness
beforeEach(async () => {
  // Port 9 (discard) on loopback: nothing answers there.
  h = await harness({
    OIDC_ISSUER: 'https://127.0.0.1:9',
    OIDC_CLIENT_ID: 'tessera',
    OIDC_CLIENT_SECRET: 'secret',
    OIDC_NAME: 'Acme ID',
  })
})
afterEach(() => h.close())

it('keeps the single sign-on button off while its provider cannot be reached', async () => {
  const b = new DashboardClient(h.app)
  const page = await b.get('/account/sign-in')
  expect(page.status).toBe(200)
  expect(page.body).not.toContain('Sign in with Acme ID')
  expect(page.body).toContain('<button type="submit">Sign in</button>')
  const start = await b.get('/account/sso')
  expect(start.status).toBe(503)
  expect(titleOf(start.body)).toBe('Service unavailable')
  expect(start.headers['set-cookie']).toBeUndefined()
  // The callback of a flow never begun: refused, no session.
  const callback = await b.get('/account/sso/callback?code=x&state=y')
  expect(callback.status).toBe(400)
  expect(titleOf(callback.body)).toBe('Sign-in refused')
  expect(b.cookie).toBeUndefined()
})
