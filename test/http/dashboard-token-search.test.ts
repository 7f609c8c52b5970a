import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Harness, harness } from '../helpers.js'
import { type DashboardClient, signedInHolder, titleOf } from './dashboard-client.js'

/** The tokens page's search (issue 45): by note or id, pk or sk, on both dialects. */
describe('searching the tokens page', () => {
  let h: Harness
  let browser: DashboardClient

  beforeEach(async () => {
    h = await harness()
    browser = await signedInHolder(h.app, h.ctx, 'alice', 'correct horse battery staple')
  })
  afterEach(() => h.close())

  /** The notes the page lists, row by row (the links' texts). */
  const notesOf = (body: string) =>
    [
      ...body.matchAll(/<th scope="row">\s*<a href="\/account\/tokens\/c\w+"[^>]*>([^<]*)<\/a>/g),
    ].map((m) => m[1])
  const list = async (query: string) => {
    const page = await browser.get(`/account?${query}`)
    expect(page.status, query).toBe(200)
    return page.body
  }

  it('finds by a part of the note, capitals aside, or of the id; and by usage', async () => {
    const tick = () => {
      h.clock.now += 1000
    }
    const made: Record<string, string> = {}
    for (const [note, scopes] of [
      ['Website maps', ['styles:read']],
      ['website geocoding', ['styles:read']],
      ['Backend batch', ['tokens:read']],
      ['100% coverage', ['styles:read']],
      ['under_score', ['styles:read']],
      ['back\\slash', ['styles:read']],
      ['Élan "quoted" <b>', ['styles:read']],
    ] as const) {
      tick()
      made[note] = (await h.token('alice', [...scopes], { note })).id
    }
    expect(notesOf(await list('q=WEBSITE'))).toEqual(['Website maps', 'website geocoding'])
    expect(notesOf(await list('q=%20batch%20'))).toEqual(['Backend batch'])
    expect(notesOf(await list('q=&usage=sk'))).toEqual(['Backend batch'])
    expect(notesOf(await list('usage=pk'))).toEqual([
      'Default public token',
      'Website maps',
      'website geocoding',
      '100% coverage',
      'under_score',
      'back\\slash',
      'Élan &quot;quoted&quot; &lt;b&gt;',
    ])
    expect(notesOf(await list('q=website&usage=sk'))).toEqual([])
    // Typed characters are themselves: no wildcard, no escape.
    expect(notesOf(await list('q=%25'))).toEqual(['100% coverage'])
    expect(notesOf(await list('q=_'))).toEqual(['under_score'])
    expect(notesOf(await list('q=%5C'))).toEqual(['back\\slash'])
    expect(notesOf(await list(`q=${encodeURIComponent('"quoted"')}`))).toEqual([
      'Élan &quot;quoted&quot; &lt;b&gt;',
    ])
    expect(notesOf(await list(`q=${encodeURIComponent('Élan')}`))).toEqual([
      'Élan &quot;quoted&quot; &lt;b&gt;',
    ])
    // An id, whole or in part (ids are not in the notes).
    const id = made['Backend batch'] as string
    expect(notesOf(await list(`q=${id}`))).toEqual(['Backend batch'])
    expect(notesOf(await list(`q=${id.slice(5, 15).toUpperCase()}`))).toEqual(['Backend batch'])

    const none = await list('q=nothing%20like%20it')
    expect(none).not.toContain('<table')
    expect(none).toContain(
      '<p role="status" class="summary">No tokens whose note or id contains “nothing like it”.</p>',
    )
    expect(none).toContain('<a href="/account" class="clear">Show all tokens</a>')
    expect(none).toContain('value="nothing like it"')
    const sk = await list('usage=sk')
    expect(sk).toContain('<p role="status" class="summary">1 sk token.</p>')
    expect(sk).toContain('<option value="sk" selected>sk only</option>')
    // Unfiltered: no summary, no way back.
    const all = await list('')
    expect(all).not.toContain('class="summary"')
    expect(all).not.toContain('Show all tokens')
  })

  it('pages a search 100 at a time, both ways, keeping it', async () => {
    for (let i = 0; i < 150; i++) {
      h.clock.now += 1
      await h.token('alice', i % 2 === 0 ? ['styles:read'] : ['tokens:read'], {
        note: `${i % 2 === 0 ? 'even' : 'odd'}-${String(i).padStart(3, '0')}`,
      })
    }
    for (let i = 0; i < 60; i++) {
      h.clock.now += 1
      await h.token('alice', ['styles:read'], { note: `even-more-${i}` })
    }
    const first = await list('q=even-&usage=pk')
    expect(notesOf(first)).toHaveLength(100)
    expect(first).toContain('100 pk tokens on this page whose note or id contains “even-”.')
    expect(first).not.toContain('Previous page')
    const next = /<a href="([^"]+)">Next page<\/a>/.exec(first)?.[1]?.replaceAll('&amp;', '&') ?? ''
    expect(next).toMatch(/^\/account\?q=even-&usage=pk&start=[^&]+$/)
    const second = await list(next.slice('/account?'.length))
    expect(notesOf(second)).toEqual([
      ...Array.from({ length: 60 }, (_, i) => `even-more-${i}`).slice(25),
    ])
    expect(second).not.toContain('Next page')
    const previous =
      /<a href="([^"]+)">Previous page<\/a>/.exec(second)?.[1]?.replaceAll('&amp;', '&') ?? ''
    expect(previous).toMatch(/^\/account\?q=even-&usage=pk&before=[^&]+$/)
    const back = await list(previous.slice('/account?'.length))
    expect(notesOf(back)).toEqual(notesOf(first))
    expect(back).not.toContain('Previous page')
  })

  it('refuses a filter no form makes, and a cursor it never gave', async () => {
    for (const query of ['usage=tk', 'usage=PK', `q=${'x'.repeat(1025)}`, 'q=a&start=nonsense']) {
      const page = await browser.get(`/account?${query}`)
      expect(page.status, query).toBe(422)
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    }
    const refused = await browser.get('/account?usage=tk')
    expect(titleOf(refused.body)).toBe('Request refused')
    expect(refused.body).toContain('This is not the address of a page of your tokens.')
    // The longest note is 1,024 characters: a search as long is still one.
    expect((await browser.get(`/account?q=${'x'.repeat(1024)}`)).status).toBe(200)
  })
})
