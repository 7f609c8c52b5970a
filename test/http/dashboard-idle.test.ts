import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { signedInHolder } from './dashboard-client.js'

/**
 * The idle notice on the dashboard, with the harness's fake clock (the browser suite's server
 * runs on the real one, so it cannot wait 23 days): a token warned as idle is listed under
 * "Needs attention" with when it will be deleted, and its Roll and Delete.
 */
const day = 86_400_000
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')

let h: Harness
afterEach(() => h.close())

describe('the idle notice', () => {
  it('lists a token warned as idle with its deletion date and actions, until it is used', async () => {
    h = await harness(adminEnv)
    const pk = await h.token('alice', ['styles:read'], { note: 'old widget' })
    expect(
      (await admin(h.app, 'PUT', '/accounts/alice/token-policy', { idleDays: 30 })).status,
    ).toBe(200)
    h.clock.now = T0 + 23 * day
    expect((await h.ctx.hygiene.sweepIdle()).warned).toBe(1)
    const b = await signedInHolder(h.app, h.ctx, 'alice', 'correct horse battery staple')
    const page = await b.get('/account')
    expect(page.status).toBe(200)
    const notice = /<li class="notice-idle">[\s\S]*?<\/li>/.exec(page.body)?.[0] ?? ''
    expect(text(notice).trim()).toBe(
      'old widget pk has not been used for a long time: it will be deleted 22 Dec 2026 (in 7 days). Use it to keep it, or delete it now. Roll Delete',
    )
    expect(notice).toContain(`href="/account/tokens/${pk.id}#roll" aria-label="Roll old widget"`)
    expect(notice).toContain(
      `href="/account/tokens/${pk.id}/delete" aria-label="Delete old widget"`,
    )
    // Used: the warning no longer matches its last use, and the notice is gone.
    expect((await h.app.inject({ url: `/tokens/v2?access_token=${pk.token}` })).json().code).toBe(
      'TokenValid',
    )
    await h.ctx.usage.flush()
    expect((await b.get('/account')).body).not.toContain('notice-idle')
  })
})
